"""The dashboard in headless Chromium over the DevTools protocol: driven by scripts/dashboard-check."""
import base64, hashlib, json, os, subprocess, sys, time, urllib.error, urllib.request

import websocket

url, binary, work, app_id, cdp_port, screenshot = sys.argv[1:7]
admin = os.environ["ATTESTKIT_DASHBOARD_ADMIN"]
backend = os.environ["ATTESTKIT_DASHBOARD_BACKEND"]
b64 = lambda data: base64.b64encode(data).decode()


def fail(message):
    sys.exit(f"dashboard-check: {message}")


def call(method, path, body=None, token=None):
    request = urllib.request.Request(url + path, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def simulate(name, *arguments):
    out = os.path.join(work, "simulated-" + name)
    subprocess.run([binary, "simulate", *arguments, "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "index.json"), encoding="utf-8") as file:
        entry = json.load(file)[-1]
    with open(os.path.join(out, entry["file"]), encoding="utf-8") as file:
        return json.load(file)


# --- real traffic: one key, two assertions, a replay, a refused attestation ---------------------------------------
status, challenge = call("POST", "/v1/challenges", {})
assert status == 201, (status, challenge)
vector = simulate("attestation", "attestation", "--app-id", app_id, "--environment", "development", "--state",
                  os.path.join(work, "device.json"), "--client-data-hash",
                  b64(hashlib.sha256(base64.b64decode(challenge["challenge"])).digest()))
key_id = vector["keyId"]
status, _ = call("POST", "/v1/attestations",
                 {"keyId": key_id, "attestation": vector["data"], "challengeId": challenge["challengeId"]})
assert status == 201, status
for index in range(2):
    data = f"the integrator's own client data {index}".encode()
    signed = simulate(f"a{index}", "assertion", "--state", os.path.join(work, "device.json"), "--key-id", key_id,
                      "--client-data-b64", b64(data))["data"]
    verify = {"keyId": key_id, "assertion": signed, "clientData": b64(data)}
    status, _ = call("POST", "/v1/assertions/verify", verify, backend)
    assert status == 200, status
status, _ = call("POST", "/v1/assertions/verify", verify, backend)
assert status == 409, f"the replay: {status}"
status, challenge = call("POST", "/v1/challenges", {})
status, _ = call("POST", "/v1/attestations",
                 {"keyId": key_id, "attestation": vector["data"], "challengeId": challenge["challengeId"]})
assert status >= 400, f"a second attestation of the same key: {status}"
print("   traffic: 1 attestation accepted, 1 refused, 2 assertions accepted, 1 replay refused", file=sys.stderr)

# --- the browser ------------------------------------------------------------------------------------------------
for _ in range(100):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{cdp_port}/json/list", timeout=2) as response:
            pages = [page for page in json.load(response) if page["type"] == "page"]
        if pages:
            break
    except OSError:
        pass
    time.sleep(0.2)
else:
    fail("chromium's DevTools endpoint did not answer")
socket = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=20, suppress_origin=True)
next_id = 0
requested = []


def send(method, **params):
    global next_id
    next_id += 1
    socket.send(json.dumps({"id": next_id, "method": method, "params": params}))
    while True:
        message = json.loads(socket.recv())
        if message.get("method") == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
        if message.get("id") == next_id:
            if "error" in message:
                fail(f"{method}: {message['error']}")
            return message.get("result", {})


def evaluate(expression):
    return send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")


def wait_for(predicate, what):
    for _ in range(100):
        if evaluate(predicate):
            return
        time.sleep(0.1)
    fail(f"timed out waiting for {what}; at {evaluate('location.href')}")


send("Network.enable")
send("Page.enable")
send("Page.navigate", url=url + "/dashboard")
wait_for("document.readyState === 'complete' && location.pathname === '/dashboard/login'", "the login form")
print("   /dashboard without a session: sent to the login form", file=sys.stderr)
evaluate(f"document.querySelector('input[name=token]').value = {json.dumps(admin)};"
         "document.querySelector('form').submit(); true")
wait_for("document.readyState === 'complete' && location.pathname === '/dashboard' "
         "&& document.body.innerText.includes('Top rejection codes')", "the dashboard after logging in")
text = evaluate("document.body.innerText")
cookies = send("Storage.getCookies")["cookies"]
session = [cookie for cookie in cookies if cookie["name"] == "attestkit_session"]
if len(session) != 1:
    fail(f"no session cookie: {cookies}")
if not session[0]["httpOnly"] or session[0]["sameSite"] != "Strict" or not session[0]["secure"]:
    fail(f"the session cookie lacks HttpOnly, SameSite=Strict or Secure: {session[0]}")
if evaluate("document.cookie") != "":
    fail("the session cookie is visible to scripts")
rows = {line.split("\t")[0]: line.split("\t")[1:] for line in text.splitlines() if "\t" in line}


def expect_row(label, total):
    if label not in rows or rows[label][0] != total:
        fail(f"expected the row {label!r} with {total}, got {rows.get(label)}; page:\n{text}")
    print(f"   ok   {label}: {total}", file=sys.stderr)


expect_row("attestation · accepted", "1")
expect_row("assertion · accepted", "2")
expect_row("assertion · rejected", "1")
expect_row("replays refused", "1")
expect_row("development · active", "1")
expect_row("counter_not_increasing", "1")
expect_row("state", "up")
foreign = [address for address in requested if not address.startswith(url)]
if foreign:
    fail(f"the dashboard loaded other resources: {foreign}")
print(f"   ok   {len(requested)} requests, all to the service; no script, font or CDN", file=sys.stderr)
if screenshot:
    # A second view a few seconds later, after more traffic, shows rates per minute too.
    time.sleep(6)
    for _ in range(3):
        call("POST", "/v1/challenges", {})
    send("Page.reload")
    wait_for("document.readyState === 'complete' && document.body.innerText.includes('rates over') "
             "&& !document.body.innerText.includes('next refresh')", "the dashboard with rates")
    height = evaluate("document.documentElement.scrollHeight")
    send("Emulation.setDeviceMetricsOverride", width=1440, height=min(int(height), 2400), deviceScaleFactor=1,
         mobile=False)
    image = send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
    with open(screenshot, "wb") as file:
        file.write(base64.b64decode(image))
    print(f"   screenshot: {screenshot}", file=sys.stderr)

# --- logging out: the page's Sign out button ends the session on the server and in the browser ----------------------
evaluate("document.querySelector('form[action=\"dashboard/logout\"]').submit(); true")
wait_for("document.readyState === 'complete' && location.pathname === '/dashboard/login'",
         "the login form after logging out")
if any(cookie["name"] == "attestkit_session" for cookie in send("Storage.getCookies")["cookies"]):
    fail("the session cookie is still in the browser after logging out")
old_session = urllib.request.Request(url + "/dashboard", headers={"Cookie": f"attestkit_session={session[0]['value']}"})
try:
    with urllib.request.urlopen(old_session, timeout=10) as response:
        fail(f"the ended session still opens the dashboard: {response.status}")
except urllib.error.HTTPError as error:
    if error.code != 401:
        fail(f"the ended session: expected 401, got {error.code}")
send("Page.navigate", url=url + "/dashboard")
wait_for("document.readyState === 'complete' && location.pathname === '/dashboard/login'",
         "the login form when visiting the dashboard after logging out")
print("   ok   Sign out: cookie cleared, the session refused by the server, /dashboard back to the login form",
      file=sys.stderr)
print("dashboard-check: the dashboard shows the traffic in headless Chromium, and logging out ends the session")
