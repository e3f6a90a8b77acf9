"""Attestations of merges: a signed in-toto statement per published merge, checked by the gateway's CLI and by
the standard DSSE and in-toto libraries, refused after any change, recorded before the branch moves."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conftest import http_gateway, inproc_client, ledger_rows, text_of, token
from test_commit_protocol import approved_merge, merges

from gateway.attest.attestations import NOTES_REF
from gateway.attest.dsse import open_envelope, seal
from gateway.attest.errors import AttestationError
from gateway.attest.statement import PREDICATE_TYPE
from gateway.process import gateway_cli
from gateway.repo import Repo
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio


async def committed_merge(config: Any) -> tuple[Gateway, str]:
    gateway, intent_id = await approved_merge(config)
    async with inproc_client(gateway, token(config, "committer", agent="committer")) as client:
        result = await client.call_tool("intent_commit", {"intent_id": intent_id})
    assert result.structured_content["state"] == "committed", text_of(result)
    return gateway, result.structured_content["outcome"]["merge_commit"]


def standard_verify(envelope: dict[str, Any], jwks: dict[str, Any]) -> dict[str, Any]:
    """The envelope checked by securesystemslib's DSSE and in-toto-attestation's Statement, knowing nothing
    of the gateway but its published keys."""
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    keys = [
        SSlibKey(
            keyid=jwk["kid"],
            keytype="ed25519",
            scheme="ed25519",
            keyval={"public": base64.urlsafe_b64decode(jwk["x"] + "==").hex()},
        )
        for jwk in jwks["keys"]
    ]
    dsse = Envelope.from_dict(copy.deepcopy(envelope))  # from_dict takes the signatures out of the dict
    dsse.verify(keys, 1)  # raises VerificationError
    statement = Statement.copy_from_pb(json_format.Parse(dsse.payload, statement_pb2.Statement()))
    statement.validate()
    return json.loads(dsse.payload)


@pytest.mark.slow
async def test_a_merge_carries_an_attestation_that_verifies_and_fails_after_any_change(
    config: Any, repo: Path, tmp_path: Path
) -> None:
    gateway, merge = await committed_merge(config)
    git = Repo(repo)
    note = git.run("notes", f"--ref={NOTES_REF}", "show", merge).strip()
    envelope = json.loads(note)
    jwks = gateway.attestations.jwks()

    # the gateway's CLI verifies it, and so do the standard libraries, with the same published keys
    verified = gateway_cli(config, "attest", "verify", "main", "--json")
    assert verified.returncode == 0, verified.stderr
    statement = standard_verify(envelope, jwks)
    assert statement == json.loads(verified.stdout)["statement"]
    assert statement["predicateType"] == PREDICATE_TYPE
    assert statement["subject"] == [
        {"name": "commit", "digest": {"gitCommit": merge}},
        {"name": "tree", "digest": {"gitTree": git.run("rev-parse", f"{merge}^{{tree}}").strip()}},
    ]
    predicate = statement["predicate"]
    steps = {s["step"]: s for s in predicate["steps"]}
    assert [(steps[s]["agent"], steps[s]["role"]) for s in ("claim", "report", "approval", "commit")] == [
        ("worker", "worker"),
        ("worker", "worker"),
        ("verifier", "verifier"),
        ("committer", "committer"),
    ]
    assert all(steps[s]["credential"] for s in ("claim", "report", "approval", "commit"))
    assert steps["verification.red"]["exit_codes"] == [1] and steps["verification.green"]["exit_codes"] == [0]
    assert steps["verification.green"]["output_digests"][0].startswith("sha256:")
    assert predicate["policy"]["revision"] == gateway.engine.revision()
    assert predicate["task"]["manifest"]["digest"].startswith("sha256:") and predicate["ledger"]["seq"] > 0
    # recorded in the store and the ledger before the branch moved, then published
    signed, published = (r.detail for r in ledger_rows(gateway, kind="attestation")[:2])
    assert (signed["action"], signed["envelope"], published["action"]) == ("signed", envelope, "published")
    assert gateway.attestations.get(merge)["state"] == "published"

    # any byte of the envelope changed: it no longer verifies
    text = note.encode()
    for i in range(len(text)):
        altered = text[:i] + bytes([text[i] ^ 1]) + text[i + 1 :]
        with pytest.raises(AttestationError):
            open_envelope(altered, jwks)
    altered_note = note.replace(envelope["payload"][:8], envelope["payload"][:7] + "A", 1)
    git.run("notes", f"--ref={NOTES_REF}", "add", "-f", "-m", altered_note, merge)
    altered = gateway_cli(config, "attest", "verify", "main")
    assert altered.returncode == 1 and "(attestation_invalid)" in altered.stderr
    git.run("notes", f"--ref={NOTES_REF}", "add", "-f", "-m", note, merge)

    # any byte of the commit changed: another commit, which the attestation does not name
    body = git.run("cat-file", "commit", merge)
    forged = git.run("hash-object", "-t", "commit", "-w", "--stdin", input=body.replace("Merge", "Merge!", 1)).strip()
    git.run("notes", f"--ref={NOTES_REF}", "copy", merge, forged)
    refused = gateway_cli(config, "attest", "verify", forged)
    assert refused.returncode == 1 and "(attestation_invalid)" in refused.stderr
    assert "not " + forged[:12] in refused.stderr

    # a note for a commit the gateway never merged, and a commit with none
    plain = git.run("rev-parse", "main~1").strip()
    missing = gateway_cli(config, "attest", "verify", plain)
    assert missing.returncode == 1 and "(attestation_missing)" in missing.stderr
    # signed by a key that is not the gateway's
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    (tmp_path / "other.json").write_text(json.dumps(seal(statement, "someone-else", Ed25519PrivateKey.generate())))
    other = gateway_cli(config, "attest", "verify", merge, "--envelope", str(tmp_path / "other.json"))
    assert other.returncode == 1 and "(attestation_unknown_key)" in other.stderr and "someone-else" in other.stderr

    # rotation: a new key signs, the old one stays published, so the old attestation still verifies
    rotated = gateway_cli(config, "attest", "rotate").stdout.strip()
    assert {k["kid"] for k in gateway.attestations.jwks()["keys"]} == {rotated, envelope["signatures"][0]["keyid"]}
    assert gateway_cli(config, "attest", "verify", merge).returncode == 0
    checks = [r.detail for r in ledger_rows(gateway, kind="attestation") if r.detail["action"] == "verify"]
    assert [c.get("error", {}).get("code") for c in checks] == [
        None,
        "attestation_invalid",
        "attestation_invalid",
        "attestation_missing",
        "attestation_unknown_key",
        None,
    ]

    # the running gateway serves the same keys
    with http_gateway(config.source) as url:
        served = httpx2.get(f"{url}/.well-known/jwks.json").json()
    assert served == gateway.attestations.jwks() and served["keys"][0]["kty"] == "OKP"


async def test_a_merge_whose_attestation_cannot_be_signed_is_not_published(config: Any, repo: Path) -> None:
    gateway, intent_id = await approved_merge(config)
    ring = gateway.attestations.ring
    ring.create()
    (ring.directory / f"{ring.active_kid()}.pem").write_text("not a key\n")  # a real fault: the key is unreadable
    before = Repo(repo).run("rev-parse", "main").strip()
    async with inproc_client(gateway, token(config, "committer")) as client:
        result = await client.call_tool("intent_commit", {"intent_id": intent_id})
    assert result.structured_content["state"] == "approved", text_of(result)  # deferred: not the work's fault
    assert "attestation could not be recorded" in text_of(result)
    assert Repo(repo).run("rev-parse", "main").strip() == before and merges(repo) == []


async def test_recovery_withdraws_an_unpublished_attestation_and_publishes_a_published_one(
    config: Any, repo: Path
) -> None:
    """What a crash between recording the attestation and moving the branch leaves, settled on recovery."""
    from gateway.types import Principal

    gateway, intent_id = await approved_merge(config)
    git = Repo(repo)
    task = gateway.board.get("T1")
    base = git.run("rev-parse", "main").strip()
    committer = Principal(agent="committer", role="committer", jti="j1")
    made = []
    for n in (1, 2):
        work = task["verification"]["commit"]
        made.append(git.run("commit-tree", f"{work}^{{tree}}", "-p", base, "-p", work, "-m", f"merge {n}").strip())
        intent = gateway.intents.get(intent_id)
        gateway.attestations.sign(
            intent=intent, task=task, committer=committer, base=base, ref="refs/heads/main", merge_commit=made[-1]
        )
    git.run("update-ref", "refs/heads/main", made[1], base)  # the second was published before the crash
    assert [gateway.attestations.get(c)["state"] for c in made] == ["pending", "pending"]

    Gateway(config).queue.recover()
    assert [gateway.attestations.get(c)["state"] for c in made] == ["withdrawn", "published"]
    assert gateway_cli(config, "attest", "verify", made[1]).returncode == 0
    removed = gateway_cli(config, "attest", "verify", made[0])
    assert removed.returncode == 1 and "(attestation_missing)" in removed.stderr  # its note was removed
    envelope = Path(repo.parent / "withdrawn.json")
    envelope.write_text(gateway.attestations.get(made[0])["envelope"])
    withdrawn = gateway_cli(config, "attest", "verify", made[0], "--envelope", str(envelope))
    assert withdrawn.returncode == 1 and "(attestation_not_published)" in withdrawn.stderr


async def test_the_attestations_go_where_the_branch_is_pushed(config: Any, repo: Path, tmp_path: Path) -> None:
    """A push intent pushes the notes ref after the branch (its approval is tier 3: the push itself is run
    here as the executor runs it, once approved)."""
    gateway, merge = await committed_merge(config)
    remote = tmp_path / "remote.git"
    Repo(tmp_path).run("init", "-q", "--bare", str(remote))
    Repo(repo).run("push", "-q", "--", str(remote), "main")
    assert gateway.committer._push_notes({"remote": str(remote), "ref": "main"}) == {"attestations": "pushed"}
    note = Repo(remote).run("notes", f"--ref={NOTES_REF}", "show", merge)
    assert open_envelope(note.strip(), gateway.attestations.jwks())[1] == json.loads(note)["signatures"][0]["keyid"]
