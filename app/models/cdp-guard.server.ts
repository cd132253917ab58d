// Human control over CDP (docs/decisions/0011-cdp-proxy.md): while a person holds a screen
// exclusively, the commands a CDP client sends to that screen's browser are read, and those that
// would inject input, navigate, or change what the person sees or does are answered with a CDP
// error naming the takeover instead of being forwarded. Reads go on. The lists below are the
// decision; the ADR gives the reasons and the known gaps.

/**
 * Refused in every form but DOMAIN_READS: each command of these domains injects input, changes
 * the screen, answers the person's prompts and devices for them (smart cards, wallets), acts
 * on the page through its own declared tools (WebMCP), casts it elsewhere, or (FindInPage)
 * scrolls it to a match and highlights it.
 */
const DOMAINS = new Set([
  "Input",
  "Overlay",
  "Autofill",
  "FedCm",
  "DeviceAccess",
  "PWA",
  "Extensions",
  "WebAuthn",
  "BluetoothEmulation",
  "FindInPage",
  "WebMCP",
  "SmartCardEmulation",
  "DigitalCredentials",
  "Cast",
]);

/** Commands of those domains that only read, turn events on or off, or take highlights away. */
const DOMAIN_READS = new Set([
  "Overlay.enable",
  "Overlay.disable",
  "Overlay.hideHighlight",
  ...["FindInPage", "WebMCP", "SmartCardEmulation", "DigitalCredentials", "Cast"].flatMap((d) => [`${d}.enable`, `${d}.disable`]),
]);

const METHODS = new Set([
  // Navigation and what the tab shows.
  "Page.navigate",
  "Page.reload",
  "Page.navigateToHistoryEntry",
  "Page.resetNavigationHistory",
  "Page.stopLoading",
  "Page.setDocumentContent",
  "Page.close",
  "Page.crash",
  "Page.bringToFront",
  "Page.setWebLifecycleState",
  // The person's own dialogs and file choosers are theirs to answer.
  "Page.handleJavaScriptDialog",
  "DOM.setFileInputFiles",
  // Tabs and windows.
  "Target.createTarget",
  "Target.closeTarget",
  "Target.activateTarget",
  "Target.disposeBrowserContext",
  "Target.exposeDevToolsProtocol",
  // A DevTools window over the person's page.
  "Target.openDevTools",
  "Browser.close",
  "Browser.crash",
  "Browser.crashGpuProcess",
  "Browser.setWindowBounds",
  "Browser.executeBrowserCommand",
  "Browser.cancelDownload",
  // The DOM under the person's eyes and their focus and scroll position.
  "DOM.focus",
  "DOM.scrollIntoViewIfNeeded",
  "DOM.setAttributeValue",
  "DOM.setAttributesAsText",
  "DOM.removeAttribute",
  "DOM.removeNode",
  "DOM.setNodeName",
  "DOM.setNodeValue",
  "DOM.setOuterHTML",
  "DOM.moveTo",
  "DOM.copyTo",
  "DOM.undo",
  "DOM.redo",
  // Old names Chromium hands on to the refused Overlay.highlightNode and highlightRect.
  "DOM.highlightNode",
  "DOM.highlightRect",
  // Popovers and interest forced open, spelling markers drawn on the person's text.
  "DOM.forceShowPopover",
  "DOM.forceShowInterest",
  "DOM.setTextMarker",
  "CSS.addRule",
  "CSS.createStyleSheet",
  "CSS.forcePseudoState",
  "CSS.forceStartingStyle",
  "Animation.seekAnimations",
  // How the page is laid out and drawn.
  "Emulation.setDeviceMetricsOverride",
  "Emulation.clearDeviceMetricsOverride",
  "Emulation.setVisibleSize",
  "Emulation.setPageScaleFactor",
  "Emulation.resetPageScaleFactor",
  "Emulation.setDefaultBackgroundColorOverride",
  "Emulation.setEmitTouchEventsForMouse",
  "Emulation.setScrollbarsHidden",
  "Emulation.setScriptExecutionDisabled",
  "Emulation.setAutoDarkModeOverride",
  "Emulation.setEmulatedVisionDeficiency",
  "Emulation.setVirtualTimePolicy",
  "Page.setDeviceMetricsOverride",
  "Page.clearDeviceMetricsOverride",
  // Freezing the page in the debugger, or changing its code.
  "Debugger.pause",
  "Debugger.setScriptSource",
  "Debugger.setBreakpoint",
  "Debugger.setBreakpointByUrl",
  "Debugger.setBreakpointOnFunctionCall",
  "Debugger.setInstrumentationBreakpoint",
  "Debugger.setVariableValue",
  "Debugger.setReturnValue",
  // Rewriting or cutting what the person's page loads, and their signed-in state.
  "Fetch.enable",
  "Network.setRequestInterception",
  "Network.setBlockedURLs",
  "Network.clearBrowserCookies",
  "Network.deleteCookies",
  "Page.deleteCookie",
  "Network.deleteDeviceBoundSession",
  "Network.setCookie",
  "Network.setCookies",
  "Storage.clearCookies",
  "Storage.setCookies",
  "Storage.clearDataForOrigin",
  "Storage.clearDataForStorageKey",
  "Storage.overrideQuotaForOrigin",
  "Storage.setSharedStorageEntry",
  "Storage.deleteSharedStorageEntry",
  "Storage.clearSharedStorageEntries",
  "Storage.deleteStorageBucket",
  "Storage.clearTrustTokens",
  "Storage.clearPrivateVerificationTokens",
  "Storage.deletePrivateVerificationToken",
  "Storage.runBounceTrackingMitigations",
  "DOMStorage.setDOMStorageItem",
  "DOMStorage.removeDOMStorageItem",
  "DOMStorage.clear",
  "IndexedDB.clearObjectStore",
  "IndexedDB.deleteDatabase",
  "IndexedDB.deleteObjectStoreEntries",
  "CacheStorage.deleteCache",
  "CacheStorage.deleteEntry",
  "Network.clearBrowserCache",
  // What the person's browser grants and trusts: permissions (the clipboard with no gesture, the
  // camera…), certificates, CSP, payment and protocol-handler prompts answered for them.
  "Browser.grantPermissions",
  "Browser.resetPermissions",
  "Browser.addMockCamera",
  "Security.setIgnoreCertificateErrors",
  "Security.setOverrideCertificateErrors",
  "Security.handleCertificateError",
  "Page.setBypassCSP",
  "Page.setSPCTransactionMode",
  "Page.setRPHRegistrationMode",
  "Page.setAdBlockingEnabled",
  "Page.setGeolocationOverride",
  "Page.setDeviceOrientationOverride",
  "Page.setTouchEmulationEnabled",
  "Page.setDownloadBehavior",
  "DeviceOrientation.setDeviceOrientationOverride",
  // Stopping the person's page's scripts, or squeezing it.
  "Runtime.terminateExecution",
  "Memory.simulatePressureNotification",
  "Memory.forciblyPurgeJavaScriptMemory",
]);

/**
 * Setters refused in all their forms but these: what Playwright and Puppeteer send when they
 * attach (checked by logging both: Playwright sends Emulation.setFocusEmulationEnabled on every
 * page it attaches to), or that is decided by its params below. Refusing one of them would stop
 * a script from even connecting during a takeover.
 */
const SETTER_EXCEPTIONS = new Set([
  "Emulation.setFocusEmulationEnabled",
  "Emulation.setEmulatedMedia",
  "Emulation.setTouchEmulationEnabled",
  "Browser.setDownloadBehavior",
  // Reads: these only turn on reporting to the client, the page does not change.
  "Network.setAttachDebugStack",
  "Network.setReportingApiEnabled",
]);

/**
 * Method prefixes refused: every setter of these domains changes the page, freezes it, or
 * changes what the person's browser sends, grants or emulates (user agent, headers, cookies
 * off, CPU throttling, time zone, geolocation, service workers, permissions…), new ones included.
 */
const PREFIXES = ["CSS.set", "Animation.set", "DOMDebugger.set", "EventBreakpoints.set", "Emulation.set", "Network.set", "Browser.set", "ServiceWorker."];
const PREFIX_READS = new Set(["ServiceWorker.enable", "ServiceWorker.disable"]);

interface Command {
  id?: unknown;
  sessionId?: unknown;
  method?: unknown;
  params?: Record<string, unknown>;
}

/** Whether a command (method and params) is refused while a person holds the screen. */
export function refusedDuringTakeover(method: string, params: Record<string, unknown> = {}): boolean {
  const domain = method.split(".")[0]!;
  if (DOMAINS.has(domain)) return !DOMAIN_READS.has(method);
  if (METHODS.has(method)) return true;
  if (PREFIXES.some((p) => method.startsWith(p)) && !SETTER_EXCEPTIONS.has(method) && !PREFIX_READS.has(method)) return true;
  switch (method) {
    // Playwright's attach sends {behavior: "allowAndName", downloadPath, eventsEnabled}: files
    // named by GUID in its own folder; `default` gives the person's own back. `allow` (the file's
    // own name, in a folder the client picks: a file write) and `deny` are refused.
    case "Browser.setDownloadBehavior":
      return params.behavior !== "allowAndName" && params.behavior !== "default";
    // Playwright clears every override when it attaches ({media: "", features: [{value: ""}]});
    // only an override that changes the look is refused.
    case "Emulation.setEmulatedMedia":
      return !!params.media || (Array.isArray(params.features) && params.features.some((f) => !!(f as { value?: unknown })?.value));
    case "Emulation.setTouchEmulationEnabled":
    case "Page.setInterceptFileChooserDialog":
      return params.enabled === true;
    // Offline is refused in each of its forms (the newer two replace the first); throttling goes on.
    case "Network.emulateNetworkConditions":
    case "Network.overrideNetworkState":
      return params.offline === true;
    case "Network.emulateNetworkConditionsByRule":
      return (
        params.offline === true ||
        params.emulateOfflineServiceWorker === true ||
        (Array.isArray(params.matchedNetworkConditions) && params.matchedNetworkConditions.some((c) => (c as { offline?: unknown })?.offline === true))
      );
    case "Debugger.setPauseOnExceptions":
      return params.state !== "none";
  }
  return false;
}

/**
 * What ends a screen's browser: the browser itself, or its last tab (Chromium exits with its last
 * window). The box's entrypoint starts a browser that quit again (a sixth quit within a minute
 * only after a pause), but a crash stops the box (images/x11/entrypoint.sh), so these are box-wide writes,
 * refused while a person holds any screen of the box, as stopping it is (assertMayWriteBox), not
 * only the token's own screen. Closing a tab is refused even when it
 * is not the last: which one is, the proxy does not know.
 */
const ENDS_THE_BOX = new Set(["Browser.close", "Browser.crash", "Target.closeTarget", "Page.close"]);

/** `screen`: the person's takeover is of the token's own screen; `box`: of another screen of its box. */
export type GuardScope = "screen" | "box";

export type GuardResult = { forward: string } | { reply: string };

/** Commands Playwright retries, silently, until its timeout when they fail (the steps of an action). */
const RETRIED = /^(?:Input\.|DOM\.scrollIntoViewIfNeeded$|DOM\.focus$|DOM\.setFileInputFiles$)/;
/** How long after such a refusal the next gesture evaluation on that session reports it. */
const REPORT_WITHIN_MS = 1000;

/**
 * Per socket: the sessions whose last command was refused, and when. Playwright retries a failed
 * input step, and between tries runs an evaluation (with a user gesture) to find the element
 * again; answering that one evaluation with a JavaScript exception naming the takeover is what
 * makes it stop and report `page.click: … takeover …` instead of a bare timeout.
 */
export type GuardState = Map<string, number>;

function takeoverMessage(method: string, screen: number, scope: GuardScope = "screen"): string {
  if (scope === "box") {
    return `holm: a person has taken over screen ${screen} (exclusive takeover); ${method} ends this screen's browser, and with it the box, so it is refused until they give it back. The rest goes on.`;
  }
  return `holm: a person has taken over screen ${screen} (exclusive takeover); ${method} is refused until they give it back. Reads go on.`;
}

function takeoverError(cmd: Command, method: string, screen: number, scope: GuardScope = "screen"): string {
  const error = { code: -32000, message: takeoverMessage(method, screen, scope) };
  return JSON.stringify({ id: cmd.id ?? 0, ...(typeof cmd.sessionId === "string" ? { sessionId: cmd.sessionId } : {}), error });
}

function takeoverException(cmd: Command, screen: number): string {
  const description = `Error: ${takeoverMessage("input", screen)}`;
  const exceptionDetails = { exceptionId: 0, text: "Uncaught", lineNumber: 0, columnNumber: 0, exception: { type: "object", subtype: "error", className: "Error", description } };
  return JSON.stringify({ id: cmd.id ?? 0, ...(typeof cmd.sessionId === "string" ? { sessionId: cmd.sessionId } : {}), result: { result: { type: "undefined" }, exceptionDetails } });
}

/**
 * Checks one command (the socket's text, as the client sent it) while a person holds the screen:
 * `{reply}` answers it without forwarding, `{forward}` is what goes to the browser. What goes is
 * re-serialised from what was checked, so the browser's JSON parser never reads anything else
 * (duplicate keys, say). A gesture on an evaluation is dropped, not refused: Playwright and
 * Puppeteer mark every evaluation, reads included, as a user gesture.
 */
export function guardCommand(text: string, screen: number, state: GuardState = new Map(), now = Date.now(), scope: GuardScope = "screen"): GuardResult {
  let cmd: Command;
  try {
    cmd = JSON.parse(text) as Command;
  } catch {
    return { reply: JSON.stringify({ id: 0, error: { code: -32700, message: "holm: the message is not JSON; during a takeover only JSON commands are read" } }) };
  }
  if (!cmd || typeof cmd !== "object" || Array.isArray(cmd) || typeof cmd.method !== "string") {
    return { reply: JSON.stringify({ id: 0, error: { code: -32600, message: "holm: not a CDP command" } }) };
  }
  const session = typeof cmd.sessionId === "string" ? cmd.sessionId : "";
  const params = cmd.params && typeof cmd.params === "object" ? cmd.params : {};
  if (scope === "box") {
    if (ENDS_THE_BOX.has(cmd.method)) return { reply: takeoverError(cmd, cmd.method, screen, scope) };
  } else if (refusedDuringTakeover(cmd.method, params)) {
    if (RETRIED.test(cmd.method)) state.set(session, now);
    return { reply: takeoverError(cmd, cmd.method, screen) };
  }
  if (scope === "screen" && (cmd.method === "Runtime.evaluate" || cmd.method === "Runtime.callFunctionOn") && params.userGesture) {
    const refusedAt = state.get(session);
    state.delete(session);
    if (refusedAt !== undefined && now - refusedAt <= REPORT_WITHIN_MS) return { reply: takeoverException(cmd, screen) };
    cmd.params = { ...params, userGesture: false };
  }
  // The old, unflattened sessions carry a command inside a command.
  if (cmd.method === "Target.sendMessageToTarget") {
    if (typeof params.message !== "string") return { reply: takeoverError(cmd, cmd.method, screen, scope) };
    const inner = guardCommand(params.message, screen, new Map(), now, scope);
    if ("reply" in inner) {
      let innerMethod = "a command";
      try {
        innerMethod = String((JSON.parse(params.message) as Command).method ?? innerMethod);
      } catch {
        /* named generically */
      }
      return { reply: takeoverError(cmd, innerMethod, screen, scope) };
    }
    cmd.params = { ...params, message: inner.forward };
  }
  try {
    return { forward: JSON.stringify(cmd) };
  } catch {
    // Nested deeper than the stack allows (JSON.parse reads what JSON.stringify cannot write).
    return { reply: JSON.stringify({ id: typeof cmd.id === "number" ? cmd.id : 0, error: { code: -32600, message: "holm: the command is nested too deeply to read during a takeover" } }) };
  }
}
