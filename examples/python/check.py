"""Ask gatehost serve for a verdict, with the Python standard library only.

Start a server from the repository root (`make build`, then
`build/gatehost serve`), then run `python3 examples/python/check.py`.
Set GATEHOST_URL (default http://127.0.0.1:8490) and, when the server
requires one, GATEHOST_TOKEN (an agent token).

Only "accepted" lets an action go ahead: "rejected" and "inconclusive"
both stop it (gatehost is fail-closed).

A tool call that needs a person's confirmation (exec pipeline,
confirmation_required) is confirmed by an approval, which a person mints
with an approver token (never the agent's): set GATEHOST_APPROVER_TOKEN,
serve with --approver-token-file, and activate the session first with
`build/gatehost session activate --session dev merge_pull_request`; the
last part of this script then plays both sides.
"""

import json
import os
import urllib.error
import urllib.parse
import urllib.request

URL = os.environ.get("GATEHOST_URL", "http://127.0.0.1:8490")
TOKEN = os.environ.get("GATEHOST_TOKEN")
APPROVER_TOKEN = os.environ.get("GATEHOST_APPROVER_TOKEN")


def post(path, body, token, headers=None):
    req = urllib.request.Request(f"{URL}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **(headers or {})})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:  # 4xx/5xx: a typed error, not a verdict
        err = json.load(e)["error"]
        raise SystemExit(f"{e.code} {err['code']}: {err['message']}")


def check(pipeline, subject, request_id, session=None, approval_id=None):
    """POST a subject; return the Decision (HTTP 200 whatever the verdict).

    session must be one the agent token is bound to (else 403);
    approval_id is an approval a person minted for this very call.
    """
    path = f"/v1/pipelines/{pipeline}/check"
    if session:
        path += "?" + urllib.parse.urlencode({"session": session})
    headers = {"X-Request-Id": request_id}
    if approval_id:
        headers["X-Gatehost-Confirmation"] = approval_id
    return post(path, subject, TOKEN, headers)


def approve(pipeline, call, session):
    """The person's side: approve one tool call with an approver token.

    The approval is single-use, expires (--approval-ttl), and is bound to
    this call, session and pipeline.
    """
    query = urllib.parse.urlencode({"pipeline": pipeline, "session": session})
    return post(f"/v1/approvals?{query}", call, APPROVER_TOKEN)


# An OpenAI assistant message: two calls the GitHub catalog knows.
plan = {"role": "assistant", "tool_calls": [
    {"id": "1", "type": "function", "function": {"name": "get_me", "arguments": "{}"}},
    {"id": "2", "type": "function", "function": {
        "name": "list_issues", "arguments": json.dumps({"owner": "octo-org", "repo": "widgets"})}},
]}
# An MCP tools/call for a tool no catalog has.
unknown = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": "delete_everything", "arguments": {}}}
# A merge whose build/test cannot run here: nothing proves it safe.
merge = {"base": "main", "head": "feature",
         "file_changes": [{"path": "README.md", "before": "old\n", "after": "new\n"}]}

for pipeline, subject, rid in [("admission", plan, "py-1"),
                               ("admission", unknown, "py-2"),
                               ("merge", merge, "py-3")]:
    d = check(pipeline, subject, rid)
    why = [f["code"] for f in d["findings"] if f["severity"] == "blocking"]
    why += [s["reason"] for s in d["stages"] if s.get("reason")]
    print(f"{rid} {pipeline:9} {d['verdict']:12} run={d['run_id']} {', '.join(why)}")

if APPROVER_TOKEN:
    # A merge is non_idempotent: rejected with confirmation_required until
    # a person approves this exact call; the approval confirms it once.
    merge_call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                  "params": {"name": "merge_pull_request",
                             "arguments": {"owner": "octo-org", "repo": "widgets", "pullNumber": 42}}}
    d = check("exec", merge_call, "py-4", session="dev")
    print(f"py-4 exec      {d['verdict']:12} {', '.join(f['code'] for f in d['findings'])}")
    a = approve("exec", merge_call, "dev")
    print(f"approved {a['approval_id']} for {a['tool']} until {a['expires_at']}")
    for rid in ("py-5", "py-6"):  # the second use is a replay: rejected
        d = check("exec", merge_call, rid, session="dev", approval_id=a["approval_id"])
        print(f"{rid} exec      {d['verdict']:12} {', '.join(f['code'] for f in d['findings'])}")
