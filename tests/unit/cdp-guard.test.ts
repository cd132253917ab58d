import { describe, expect, it } from "vitest";
import { rewriteDevtools } from "~/models/cdp-access.server";
import { guardCommand } from "~/models/cdp-guard.server";

// What the CDP proxy does with a client's command while a person holds the screen
// (docs/decisions/0011-cdp-proxy.md), and how it rewrites DevTools addresses.

const send = (cmd: unknown, state?: Map<string, number>, now?: number) => guardCommand(JSON.stringify(cmd), 0, state, now);

describe("CDP takeover guard", () => {
  it("refuses input and navigation with a CDP error naming the takeover, on the command's session", () => {
    for (const method of ["Input.dispatchMouseEvent", "Input.insertText", "Page.navigate", "Target.createTarget", "DOM.setFileInputFiles"]) {
      const r = send({ id: 7, sessionId: "S", method, params: {} });
      expect("reply" in r, method).toBe(true);
      const reply = JSON.parse((r as { reply: string }).reply);
      expect(reply).toMatchObject({ id: 7, sessionId: "S", error: { code: -32000 } });
      expect(reply.error.message).toContain("takeover");
    }
  });

  it("lets reads go, and drops the gesture of an evaluation instead of refusing it", () => {
    for (const method of ["Page.captureScreenshot", "DOM.getDocument", "Runtime.getProperties", "Accessibility.getFullAXTree"]) {
      expect("forward" in send({ id: 1, method }), method).toBe(true);
    }
    const r = send({ id: 2, method: "Runtime.callFunctionOn", params: { functionDeclaration: "() => 1", userGesture: true } });
    expect(JSON.parse((r as { forward: string }).forward).params.userGesture).toBe(false);
  });

  it("refuses what changes what the person's browser grants, sends or emulates: permissions (the clipboard), headers, user agent, CSP, downloads elsewhere", () => {
    const grant = { permissions: ["clipboardReadWrite", "clipboardSanitizedWrite"], origin: "http://127.0.0.1:8000" };
    for (const [method, params] of [
      ["Browser.grantPermissions", grant],
      ["Browser.setPermission", { permission: { name: "clipboard-write" }, setting: "granted" }],
      ["Browser.resetPermissions", {}],
      ["Network.setExtraHTTPHeaders", { headers: { a: "b" } }],
      ["Network.setUserAgentOverride", { userAgent: "x" }],
      ["Emulation.setUserAgentOverride", { userAgent: "x" }],
      ["Emulation.setDocumentCookieDisabled", { disabled: true }],
      ["Emulation.setCPUThrottlingRate", { rate: 20 }],
      ["Emulation.setGeolocationOverride", { latitude: 0, longitude: 0 }],
      ["Runtime.terminateExecution", {}],
      ["Page.setBypassCSP", { enabled: true }],
      ["Security.setIgnoreCertificateErrors", { ignore: true }],
      ["Page.setDownloadBehavior", { behavior: "deny" }],
      ["Browser.setDownloadBehavior", { behavior: "allow", downloadPath: "/home/holm/.config/autostart" }],
      ["Browser.setDownloadBehavior", { behavior: "deny" }],
      ["ServiceWorker.unregister", { scopeURL: "http://127.0.0.1:8000/" }],
      ["WebAuthn.addVirtualAuthenticator", {}],
      ["DOMStorage.setDOMStorageItem", {}],
    ] as const) {
      expect("reply" in send({ id: 1, sessionId: "S", method, params }), method).toBe(true);
    }
  });

  it("refuses the newer commands of the same kinds, and old names Chromium redirects: DevTools windows, offline by rule or state, DOM highlights, forced popovers, find-in-page, page tools, emulated devices, sign-outs", () => {
    const offline = { offline: true, latency: 0, downloadThroughput: -1, uploadThroughput: -1 };
    for (const [method, params] of [
      ["Target.openDevTools", { targetId: "T" }],
      ["Network.overrideNetworkState", offline],
      ["Network.emulateNetworkConditionsByRule", { matchedNetworkConditions: [{ urlPattern: "", ...offline }] }],
      ["Network.emulateNetworkConditionsByRule", { offline: true, matchedNetworkConditions: [] }],
      ["Network.emulateNetworkConditionsByRule", { emulateOfflineServiceWorker: true, matchedNetworkConditions: [] }],
      ["DOM.highlightRect", { x: 0, y: 0, width: 10, height: 10 }],
      ["DOM.highlightNode", { highlightConfig: {}, nodeId: 1 }],
      ["DOM.forceShowPopover", { nodeId: 1, enable: true }],
      ["DOM.forceShowInterest", { nodeId: 1, enable: true }],
      ["DOM.setTextMarker", { nodeId: 1, type: "spelling", start: 0, end: 3 }],
      ["FindInPage.findFirst", { query: "x" }],
      ["FindInPage.findNext", {}],
      ["WebMCP.invokeTool", { frameId: "F", toolName: "buy", input: {} }],
      ["SmartCardEmulation.reportError", { requestId: "1", resultCode: "no-service" }],
      ["DigitalCredentials.setVirtualWalletBehavior", { action: "respond" }],
      ["Cast.startTabMirroring", { sinkName: "tv" }],
      ["Browser.addMockCamera", { deviceId: "cam" }],
      ["Page.deleteCookie", { cookieName: "sid", url: "http://127.0.0.1:8000/" }],
      ["Page.clearDeviceMetricsOverride", {}],
      ["Network.deleteDeviceBoundSession", { key: { site: "s", id: "i" } }],
      ["Storage.runBounceTrackingMitigations", {}],
      ["Storage.clearPrivateVerificationTokens", { issuerOrigin: "https://a" }],
    ] as const) {
      expect("reply" in send({ id: 1, sessionId: "S", method, params }), method).toBe(true);
    }
    // Throttling without offline goes on, as with Network.emulateNetworkConditions; so do the reads.
    for (const [method, params] of [
      ["Network.emulateNetworkConditionsByRule", { matchedNetworkConditions: [{ urlPattern: "", latency: 100, downloadThroughput: -1, uploadThroughput: -1 }] }],
      ["Network.overrideNetworkState", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 }],
      ["FindInPage.enable", {}],
      ["WebMCP.enable", {}],
      ["Overlay.hideHighlight", {}],
    ] as const) {
      expect("forward" in send({ id: 1, sessionId: "S", method, params }), method).toBe(true);
    }
  });

  it("while another screen of the box is held, refuses only what ends this screen's browser (and so the box); the rest goes as it is", () => {
    const box = (cmd: unknown) => guardCommand(JSON.stringify(cmd), 0, new Map(), 0, "box");
    for (const method of ["Browser.close", "Browser.crash", "Target.closeTarget", "Page.close"]) {
      const r = box({ id: 1, method, params: {} });
      expect("reply" in r, method).toBe(true);
      expect(JSON.parse((r as { reply: string }).reply).error.message).toContain("ends this screen's browser, and with it the box");
    }
    const inner = JSON.stringify({ id: 1, method: "Browser.close" });
    expect("reply" in box({ id: 2, method: "Target.sendMessageToTarget", params: { sessionId: "X", message: inner } })).toBe(true);
    for (const method of ["Input.dispatchMouseEvent", "Page.navigate", "Target.createTarget"]) expect("forward" in box({ id: 3, method, params: {} }), method).toBe(true);
    const evaluation = box({ id: 4, method: "Runtime.evaluate", params: { expression: "1", userGesture: true } });
    expect(JSON.parse((evaluation as { forward: string }).forward).params.userGesture).toBe(true);
  });

  it("lets through what Playwright's connectOverCDP and Puppeteer's connect send when they attach", () => {
    for (const [method, params] of [
      ["Emulation.setFocusEmulationEnabled", { enabled: true }],
      ["Browser.setDownloadBehavior", { behavior: "allowAndName", downloadPath: "/tmp/playwright-artifacts-x", eventsEnabled: true }],
      ["Browser.setDownloadBehavior", { behavior: "default" }],
      ["Page.setFontFamilies", { fontFamilies: { standard: "Times New Roman" } }],
      ["Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }],
      ["Page.addScriptToEvaluateOnNewDocument", { source: "", worldName: "w" }],
      ["Page.createIsolatedWorld", { frameId: "F", worldName: "w", grantUniveralAccess: true }],
      ["Page.setLifecycleEventsEnabled", { enabled: true }],
      ["Network.enable", {}],
      ["ServiceWorker.enable", {}],
      ["Runtime.runIfWaitingForDebugger", {}],
    ] as const) {
      expect("forward" in send({ id: 1, sessionId: "S", method, params }), method).toBe(true);
    }
  });

  it("clearing emulated media passes (Playwright's attach); setting it is refused", () => {
    expect("forward" in send({ id: 1, method: "Emulation.setEmulatedMedia", params: { media: "", features: [{ name: "prefers-color-scheme", value: "" }] } })).toBe(true);
    expect("reply" in send({ id: 1, method: "Emulation.setEmulatedMedia", params: { media: "print" } })).toBe(true);
    expect("reply" in send({ id: 1, method: "Emulation.setEmulatedMedia", params: { features: [{ name: "prefers-color-scheme", value: "dark" }] } })).toBe(true);
  });

  it("checks the command inside Target.sendMessageToTarget, and forwards only what it checked", () => {
    const inner = JSON.stringify({ id: 1, method: "Input.dispatchKeyEvent", params: {} });
    expect("reply" in send({ id: 3, method: "Target.sendMessageToTarget", params: { sessionId: "X", message: inner } })).toBe(true);
    // Duplicate keys: JSON.parse keeps the last; the browser gets exactly that, re-serialised.
    const r = guardCommand('{"id":4,"method":"Input.dispatchMouseEvent","method":"DOM.getDocument"}', 0);
    expect(JSON.parse((r as { forward: string }).forward)).toEqual({ id: 4, method: "DOM.getDocument" });
    const dup = guardCommand('{"id":5,"method":"DOM.getDocument","method":"Input.dispatchMouseEvent"}', 0);
    expect("reply" in dup).toBe(true);
  });

  it("after a refused input step, the next gesture evaluation on that session reports the takeover (once, within 1 s)", () => {
    const state = new Map<string, number>();
    send({ id: 1, sessionId: "S", method: "DOM.scrollIntoViewIfNeeded", params: {} }, state, 1000);
    const evalCmd = { id: 2, sessionId: "S", method: "Runtime.callFunctionOn", params: { userGesture: true } };
    const r = JSON.parse((send(evalCmd, state, 1500) as { reply: string }).reply);
    expect(r.result.exceptionDetails.exception.description).toContain("taken over");
    expect("forward" in send(evalCmd, state, 1600)).toBe(true);
    send({ id: 3, sessionId: "S", method: "Input.dispatchMouseEvent", params: {} }, state, 2000);
    expect("forward" in send(evalCmd, state, 3500)).toBe(true);
  });
});

describe("DevTools address rewriting", () => {
  it("points webSocketDebuggerUrl and devtoolsFrontendUrl back through the proxy", () => {
    const body = JSON.stringify({
      webSocketDebuggerUrl: "ws://127.0.0.1:9222/devtools/page/AB12",
      devtoolsFrontendUrl: "https://chrome-devtools-frontend.appspot.com/serve_rev/@x/inspector.html?ws=127.0.0.1:9222/devtools/page/AB12",
    });
    const out = JSON.parse(rewriteDevtools(body, "http://holm.local:8080", "T.K"));
    expect(out.webSocketDebuggerUrl).toBe("ws://holm.local:8080/v1/cdp/T.K/devtools/page/AB12");
    expect(out.devtoolsFrontendUrl).toContain("?ws=holm.local:8080/v1/cdp/T.K/devtools/page/AB12");
    expect(JSON.parse(rewriteDevtools(body, "https://holm.example", "T")).webSocketDebuggerUrl).toBe("wss://holm.example/v1/cdp/T/devtools/page/AB12");
    const list = JSON.parse(rewriteDevtools(JSON.stringify([{ id: "A", webSocketDebuggerUrl: "ws://127.0.0.1:9223/devtools/page/A" }]), "http://h", "T"));
    expect(list[0].webSocketDebuggerUrl).toBe("ws://h/v1/cdp/T/devtools/page/A");
    expect(JSON.parse(rewriteDevtools(JSON.stringify({ webSocketDebuggerUrl: "ws://127.0.0.1:9222/devtools/browser/9f-2a" }), "http://h", "T")).webSocketDebuggerUrl).toBe(
      "ws://h/v1/cdp/T/devtools/browser/9f-2a",
    );
  });

  it("puts the token only into a string that is a DevTools address as a whole (a box's own answer cannot send it elsewhere)", () => {
    const hostile = {
      webSocketDebuggerUrl: "ws://evil.example/?x=ws://127.0.0.1:9222/devtools/browser/B",
      devtoolsFrontendUrl: "https://evil.example/inspector.html?ws=127.0.0.1:9222/devtools/page/A",
      title: "see ws://127.0.0.1:9222/devtools/page/A",
      url: "http://x/?ws=127.0.0.1:9222/devtools/page/A",
    };
    const text = JSON.stringify(hostile);
    expect(rewriteDevtools(text, "http://holm.local:8080", "SECRET.TOKEN")).not.toContain("SECRET.TOKEN");
    expect(rewriteDevtools("<html>ws://127.0.0.1:9222/devtools/page/A</html>", "http://h", "SECRET")).not.toContain("SECRET");
  });
});
