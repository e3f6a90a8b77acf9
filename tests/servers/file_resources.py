"""An upstream that lists ``file://`` resources: the workspace's README.md, /etc/hostname outside it, and the
workspace's .env (a secret path). The gateway must judge reading each as a read of that path.

python file_resources.py WORKSPACE        # stdio
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("file-resources", version="1.0.0")
WORKSPACE = Path(sys.argv[1]).resolve()
FILES = {"readme": WORKSPACE / "README.md", "hostname": Path("/etc/hostname"), "env": WORKSPACE / ".env"}


def contents(path: Path) -> Callable[[], str]:
    return lambda: "contents of " + path.name


for name, path in FILES.items():
    server.resource(path.as_uri(), name=name, mime_type="text/plain")(contents(path))


if __name__ == "__main__":
    server.run("stdio")
