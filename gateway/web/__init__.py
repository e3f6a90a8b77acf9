"""Review pages for traces, denied calls and pending approvals (``/ui`` on ``gateway serve --http``).

from gateway.web import ui_routes
routes = [..., *ui_routes(gateway)]
"""

from gateway.web.app import ui_routes

__all__ = ["ui_routes"]
