"""Where a call is judged: every tools/call, resource read and prompt get, every ``gateway check``, Claude Code
hook event and command the gateway runs itself passes a stack of stages declared in gateway/judge/stacks.py.

    call.py          the Call (and its CallKind): what every stage reads and fills
    pipeline.py      runs a stack: its stages in order, then its finish whatever happened
    stacks.py        the stacks, declared in one place
    authenticate.py, resolve.py, valid_text.py, validate.py, situate.py (with confine.py), describe.py,
    decide.py, approval.py (acting on a tier: approvals and safeguards), act_on_tier.py, hook_event.py,
    hook_verdict.py, judged.py, record_intent.py, execute.py, keep_deadletters.py, record.py: one stage each
"""
