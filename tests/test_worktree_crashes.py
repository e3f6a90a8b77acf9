"""Claims, reports, verification and worktree repair killed by SIGKILL at random instants, with real gateway
processes and real git on a repository of thousands of files, on both stores; the gateway killed alone (the
gits it started run on, orphaned) or with its process group; then restarted, or with a second replica that ran
all along taking the next calls. Afterwards there is no claim, or a claim with a complete worktree; attempt N+1
starts clean from the base's tip with attempt N kept under its ref; no report records a file as deleted that the
worker did not delete; a verification cut short leaves no scratch checkout behind once a gateway starts.

Each trial kills at one instant drawn at random from the operation's own landmarks (a row committed, the k-th
of thousands of files written, git's index lock made, the call recorded): a wait on a condition, never on time.
By default each step is killed on as many of the six deployments as it has landmarks, at each of them in turn
(so every landmark, store, kill and topology is met by every step); ``GATEWAY_KILL_TRIALS=N`` kills every step on every
deployment N rounds, at landmarks drawn at random (the full matrix); ``GATEWAY_KILL_SEED`` replays a run."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import http_client, http_gateway, killable_gateway, make_repo, text_of, token
from test_merge_queue import big_repo

from gateway.repo import Repo
from gateway.store import Store, open_store
from gateway.tasks.worktrees import git_dir

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]

FILES = 3000
TRIALS = int(os.environ.get("GATEWAY_KILL_TRIALS", "0"))  # 0: the default matrix below
SEED = int(os.environ.get("GATEWAY_KILL_SEED", str(random.SystemRandom().randrange(1_000_000))))
VARIANTS = ("claim", "attempt", "report", "verify", "repair")
DEPLOYMENTS = [
    pytest.param(alone, topology, id=f"{'alone' if alone else 'group'}-{topology}")
    for alone in (False, True)
    for topology in ("restart", "replicas")
]
# The default matrix: the deployments (store, killed alone, topology) in a cycle where any three in a row hold
# both stores, both kills and both topologies; step s is killed on LANDMARKS[s] deployments from START[s] on, the
# k-th of them at its k-th landmark: each landmark of each step once (16 trials; a fourth deployment for a step of
# three landmarks repeated one at a cost of a gateway start and more), each deployment killing 2 or 3.
CYCLE = [
    ("sqlite", False, "restart"),
    ("postgresql", True, "replicas"),
    ("postgresql", False, "restart"),
    ("sqlite", True, "restart"),
    ("postgresql", False, "replicas"),
    ("postgresql", True, "restart"),
]
LANDMARKS = {"claim": 3, "attempt": 3, "report": 4, "verify": 3, "repair": 3}  # Trial.kill_at checks
START = {"claim": 0, "repair": 1, "verify": 2, "report": 3, "attempt": 4}


def trials(store: str, alone: bool, topology: str) -> list[tuple[int, str, int | None]]:
    """The (round, step, landmark: its index, or None for one at random) a deployment kills."""
    if TRIALS:
        return [(n, variant, None) for n in range(TRIALS) for variant in VARIANTS]
    at = CYCLE.index((store, alone, topology))
    spread = [(variant, (at - START[variant]) % len(CYCLE)) for variant in VARIANTS]
    return [(0, variant, k) for variant, k in spread if k < LANDMARKS[variant]]


@pytest.fixture(autouse=True)
def replicas_share_postgresql(request: pytest.FixtureRequest) -> None:
    """Replicas on SQLite are skipped before their repository is copied: replicas share a PostgreSQL store
    (docs/scale-out.md)."""
    params = getattr(request.node, "callspec", None)
    if params and params.params.get("topology") == "replicas" and params.params.get("store") == "sqlite":
        pytest.skip("replicas share a PostgreSQL store (docs/scale-out.md)")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository of thousands of files, made once per module; each test works on a copy."""
    repo = make_repo(tmp_path_factory.mktemp("template") / "repo")
    big_repo(repo, FILES)
    return repo


@pytest.fixture
def repo(tmp_path: Path, template: Path) -> Path:
    path = tmp_path / "repo"
    shutil.copytree(template, path, symlinks=True)
    return path


class Deployment:
    """The gateway a trial kills, and where calls go after the kill: the same workspace restarted (it recovers
    on start), or the other replica, which ran all along and never restarts."""

    def __init__(self, stack: ExitStack, config: Any, alone: bool, survivor: str | None) -> None:
        self.stack = stack
        self.config = config
        self.alone = alone
        self.survivor = survivor
        self.current: tuple[str, Callable[[], None]] | None = None

    def doomed(self) -> tuple[str, Callable[[], None]]:
        if self.current is None:
            self.current = self.stack.enter_context(killable_gateway(self.config.source, alone=self.alone))
        return self.current

    def after_kill(self) -> str:
        self.current = None
        return self.survivor or self.doomed()[0]


@contextmanager
def deployment(config: Any, alone: bool, topology: str) -> Iterator[Deployment]:
    with ExitStack() as stack:
        survivor = stack.enter_context(http_gateway(config.source)) if topology == "replicas" else None
        yield Deployment(stack, config, alone, survivor)


class Trial:
    """One trial's task, its people and the landmarks of the operation killed."""

    def __init__(
        self,
        config: Any,
        store: Store,
        rng: random.Random,
        task: str,
        tokens: dict[str, str],
        landmark: int | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.rng = rng
        self.task = task
        self.tokens = tokens
        self.landmark = landmark
        self.instant = ""

    def bearer(self, role: str) -> str:
        agent = f"w-{self.task}" if role == "worker" else role
        if agent not in self.tokens:
            self.tokens[agent] = token(self.config, role, agent=agent)
        return self.tokens[agent]

    async def call(self, url: str, role: str, tool: str, arguments: dict[str, Any]) -> Any:
        async with http_client(url, self.bearer(role)) as client:
            return await client.call_tool(tool, arguments)

    async def ok(self, url: str, role: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.call(url, role, tool, arguments)
        assert not result.is_error, f"{self}: {tool}: {text_of(result)}\n{self.tracebacks()}"
        return result.structured_content

    def tracebacks(self) -> str:
        """What the gateways' logs say went wrong (for a failure's message)."""
        logs = [log.read_text(errors="replace") for log in sorted(self.config.state.glob("gateway-*.log"))]
        return "\n".join(text[text.index("Traceback") :][:3000] for text in logs if "Traceback" in text)

    def row(self) -> dict[str, Any]:
        return dict(self.store.query("SELECT * FROM tasks WHERE id = ?", (self.task,))[0])

    @property
    def worktree(self) -> Path:
        return self.config.worktrees / self.task

    def __str__(self) -> str:
        return f"task {self.task} killed at {self.instant!r} (GATEWAY_KILL_SEED={SEED})"

    async def submit(self, url: str) -> None:
        manifest = {
            "task_id": self.task,
            "objective": f"do {self.task}",
            "allowed_paths": ["src/**", "gen/**"],
            "verification": [f"test -f src/{self.task}.py"],
        }
        await self.ok(url, "planner", "task_submit", {"manifest": manifest})

    async def kill_at(self, kill: Callable[[], None], work: Callable[[], Awaitable[Any]], **landmarks: Any) -> None:
        """Run ``work`` against the doomed gateway and kill it at one of ``landmarks`` (name -> condition),
        the trial's or one drawn at random; or once the work is over (the instant right after, when the condition
        never came)."""
        names = sorted(landmarks)
        step = self.task.rstrip("0123456789")
        assert len(names) == LANDMARKS[step], f"the default matrix kills {step} at {LANDMARKS[step]} landmarks"
        self.instant = self.rng.choice(names) if self.landmark is None else names[self.landmark % len(names)]
        condition = landmarks[self.instant]
        done = anyio.Event()

        async def run() -> None:
            try:
                await work()
            except Exception:  # the kill cuts the call short
                pass
            finally:
                done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.fail_after(120):
                while not (condition() or done.is_set()):
                    await anyio.sleep(0.001)
            kill()
            tg.cancel_scope.cancel()

    def file_written(self, root: Callable[[], list[Path]], content: str | None = None) -> Callable[[], bool]:
        """A landmark inside a checkout of thousands of files: the k-th (k at random) is there (with ``content``)."""
        k = self.rng.randrange(FILES)
        relative = Path("gen") / f"d{k // 500}" / f"m{k}.py"

        def written() -> bool:
            for directory in root():
                try:
                    if content is None or (directory / relative).read_text() == content.format(k=k):
                        return (directory / relative).exists()
                except OSError:
                    continue
            return False

        return written

    def ledger_has(self, **fields: str) -> Callable[[], bool]:
        """A row with ``fields`` recorded from now on. Asked every millisecond while the work runs: it reads only
        the rows after the last one now (a scan of the whole ledger each time cost the test a core)."""
        where = " AND ".join(f"json_extract(body, '$.{k}') = ?" for k in fields)
        last = self.store.query("SELECT max(seq) AS last FROM ledger")[0]["last"] or 0
        query = f"SELECT seq FROM ledger WHERE seq > ? AND {where} LIMIT 1"
        return lambda: bool(self.store.query(query, (last, *fields.values())))

    def assert_complete(self) -> dict[str, Any]:
        """The claim's worktree is complete: on the task branch at the attempt's base, every tracked file there
        as committed, nothing else."""
        task = self.row()
        assert task["state"] == "claimed" and task["worktree"], f"{self}: a claim without a worktree: {task}"
        tree = Repo(Path(task["worktree"]))
        assert tree.run("rev-parse", "HEAD").strip() == task["base_commit"], f"{self}: not at the attempt's base"
        assert tree.run("symbolic-ref", "HEAD").strip() == f"refs/heads/{task['branch']}", str(self)
        status = tree.run("--no-optional-locks", "status", "--porcelain", "--untracked-files=all")
        assert status == "", f"{self}: the worktree is not the base's tree:\n{status[:600]}"
        return task

    def assert_reported(self, written: set[str]) -> None:
        """The report recorded exactly what the worker changed; nothing deleted."""
        task = self.row()
        assert task["state"] == "reported", f"{self}: {task['state']} {task['note']}"
        report = json.loads(task["report"])
        assert set(report["diff"]) == written, f"{self}: the report's diff is not the worker's: {report['diff'][:20]}"
        statuses = Repo(self.config.workspace).run(
            "diff", "--name-status", "--no-renames", task["base_commit"], report["commit"]
        )
        deleted = [line for line in statuses.splitlines() if line.startswith("D")]
        assert not deleted, f"{self}: the report recorded {len(deleted)} deletions the worker never made"

    async def work_and_report(self, url: str) -> None:
        """The worker, on ``url``, reads (its worktree is made again if it must be), finds it complete, writes
        one file and reports it."""
        await self.ok(url, "worker", "fs_read", {"path": "README.md"})
        self.assert_complete()
        path = f"src/{self.task}.py"
        await self.ok(url, "worker", "fs_write", {"path": path, "content": "DONE = 1\n"})
        record = {"task_id": self.task, "status": "done", "files_changed": [path]}
        await self.ok(url, "worker", "task_report", {"record": record})
        self.assert_reported({path})

    async def claimed_after_kill(self, url: str, attempt: int) -> None:
        """A claim the kill came before is made again."""
        task = self.row()
        if task["state"] != "claimed" or task["attempt"] != attempt:
            assert task["state"] == "open", f"{self}: {task['state']}"
            await self.ok(url, "worker", "task_claim", {"task_id": self.task})


async def claim(deployment: Deployment, trial: Trial) -> None:
    url, kill = deployment.doomed()
    await trial.submit(url)
    await trial.kill_at(
        kill,
        lambda: trial.call(url, "worker", "task_claim", {"task_id": trial.task}),
        claimed=lambda: trial.row()["state"] == "claimed",
        file=trial.file_written(lambda: [trial.worktree]),
        ready=lambda: trial.row()["worktree"] is not None,
    )
    after = deployment.after_kill()
    await trial.claimed_after_kill(after, 1)
    await trial.work_and_report(after)


def move_main(repo: Path, n: int) -> None:
    """Someone commits to main, changing every generated file: the next attempt's base."""
    for i in range(FILES):
        (repo / "gen" / f"d{i // 500}" / f"m{i}.py").write_text(f"X = {i}  # moved {n}\n")
    Repo(repo).run("commit", "-q", "-am", f"moved {n}")


async def attempt(deployment: Deployment, trial: Trial) -> None:
    url, kill = deployment.doomed()
    await trial.submit(url)
    await trial.ok(url, "worker", "task_claim", {"task_id": trial.task})
    kept = f"src/{trial.task}-attempt-1.py"
    await trial.ok(url, "worker", "fs_write", {"path": kept, "content": "FIRST = 1\n"})
    await trial.ok(url, "worker", "task_release", {"task_id": trial.task})
    move_main(trial.config.workspace, trial.rng.randrange(10**9))
    moved = (trial.config.workspace / "gen" / "d0" / "m0.py").read_text().split("# moved ")[1].strip()
    await trial.kill_at(
        kill,
        lambda: trial.call(url, "worker", "task_claim", {"task_id": trial.task}),
        claimed=lambda: trial.row()["attempt"] == 2,
        file=trial.file_written(lambda: [trial.worktree], content=f"X = {{k}}  # moved {moved}\n"),
        ready=lambda: trial.row()["attempt"] == 2 and trial.row()["worktree"] is not None,
    )
    after = deployment.after_kill()
    await trial.claimed_after_kill(after, 2)
    await trial.ok(after, "worker", "fs_read", {"path": "README.md"})
    task = trial.assert_complete()
    assert task["attempt"] == 2 and not (Path(task["worktree"]) / kept).exists(), f"{trial}: attempt 1's file"
    saved = f"refs/gateway/attempts/{trial.task}/1"
    shown = Repo(trial.config.workspace).run("show", f"{saved}:{kept}", check=False)
    assert shown == "FIRST = 1\n", f"{trial}: attempt 1's work is not kept under {saved}"
    await trial.work_and_report(after)


async def report(deployment: Deployment, trial: Trial) -> None:
    url, kill = deployment.doomed()
    await trial.submit(url)
    await trial.ok(url, "worker", "task_claim", {"task_id": trial.task})
    changed = [f"gen/d{i // 500}/m{i}.py" for i in range(0, FILES, 3)]
    for path in changed:  # written in the worktree directly: a thousand fs_write calls would be slow
        (trial.worktree / path).write_text("CHANGED = 1\n")
    record = {"task_id": trial.task, "status": "done", "files_changed": changed}
    base = trial.row()["base_commit"]
    private = git_dir(trial.worktree)
    assert private is not None
    await trial.kill_at(
        kill,
        lambda: trial.call(url, "worker", "task_report", {"record": record}),
        called=trial.ledger_has(tool="task_report", outcome="started"),
        adding=lambda: (private / "index.lock").exists(),
        committed=lambda: Repo(trial.config.workspace).run("rev-parse", f"task/{trial.task}").strip() != base,
        reported=lambda: trial.row()["state"] == "reported",
    )
    after = deployment.after_kill()
    await trial.ok(after, "worker", "task_report", {"record": record})  # the worker's retry
    trial.assert_reported(set(changed))


async def verify(deployment: Deployment, trial: Trial) -> None:
    url, kill = deployment.doomed()
    await trial.submit(url)
    await trial.ok(url, "worker", "task_claim", {"task_id": trial.task})
    await trial.work_and_report(url)
    scratches = lambda: sorted(trial.config.worktrees.glob("_scratch-*"))  # noqa: E731
    await trial.kill_at(
        kill,
        lambda: trial.call(url, "verifier", "verify_run", {"task_id": trial.task}),
        scratch=lambda: bool(scratches()),
        file=trial.file_written(scratches),
        judged=trial.ledger_has(kind="verify", tool="verify_run"),
    )
    after = deployment.after_kill()
    if deployment.survivor is None:  # restarted: what the crash left was cleared on start, and recorded
        assert scratches() == [], f"{trial}: scratch checkouts left: {scratches()}"
    verified = await trial.ok(after, "verifier", "verify_run", {"task_id": trial.task})
    assert verified["passed"], f"{trial}: {verified}"


async def repair(deployment: Deployment, trial: Trial) -> None:
    url, kill = deployment.doomed()
    await trial.submit(url)
    await trial.ok(url, "worker", "task_claim", {"task_id": trial.task})
    shutil.rmtree(trial.worktree)  # a person deletes it; the worker's next call makes it again
    await trial.kill_at(
        kill,
        lambda: trial.call(url, "worker", "fs_read", {"path": "README.md"}),
        started=lambda: trial.worktree.exists(),
        file=trial.file_written(lambda: [trial.worktree]),
        repaired=trial.ledger_has(kind="task", tool="task.worktree_repaired"),
    )
    after = deployment.after_kill()
    await trial.work_and_report(after)


STEPS = {"claim": claim, "attempt": attempt, "report": report, "verify": verify, "repair": repair}


@pytest.mark.slow
@pytest.mark.timeout(120 * len(VARIANTS) * max(TRIALS, 1))  # a guard against a hang; a round takes about a minute
@pytest.mark.parametrize(("alone", "topology"), DEPLOYMENTS)
async def test_every_step_killed_at_random_instants(config: Any, alone: bool, topology: str) -> None:
    """Steps in turn (a claim, a new attempt, a report, a verification, a repair: those the default matrix gives
    this deployment, or all of them ``TRIALS`` rounds) on one deployment; then a start clears the verification
    checkouts a killed replica left."""
    rng = random.Random(f"{SEED}-{alone}-{topology}-{config.store}")
    store = open_store(config)
    tokens: dict[str, str] = {}
    with deployment(config, alone, topology) as running:
        for n, variant, landmark in trials("sqlite" if config.store is None else "postgresql", alone, topology):
            await STEPS[variant](running, Trial(config, store, rng, f"{variant}{n}", tokens, landmark))
    if topology == "replicas" and sorted(config.worktrees.glob("_scratch-*")):
        with http_gateway(config.source):
            assert sorted(config.worktrees.glob("_scratch-*")) == [], "scratch checkouts a crash left stay"


@pytest.mark.one_store
async def test_a_claim_killed_at_a_random_instant(config: Any) -> None:
    """The fast subset's one trial: a claim killed with its gits, then a restart."""
    store = open_store(config)
    with deployment(config, alone=False, topology="restart") as running:
        await claim(running, Trial(config, store, random.Random(SEED), "claim0", {}))
