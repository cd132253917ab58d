// @novnc/novnc 1.7 ships ESM without typings for its package entry (core/rfb.js); this declares
// the part of RFB the console uses (docs: node_modules/@novnc/novnc/docs/API.md).
declare module "@novnc/novnc" {
  export interface RfbOptions {
    shared?: boolean;
    credentials?: { username?: string; password?: string; target?: string };
    repeaterID?: string;
    wsProtocols?: string[];
  }

  export interface RfbEventMap {
    connect: CustomEvent<Record<string, never>>;
    disconnect: CustomEvent<{ clean: boolean }>;
    clipboard: CustomEvent<{ text: string }>;
    desktopname: CustomEvent<{ name: string }>;
    securityfailure: CustomEvent<{ status: number; reason?: string }>;
    credentialsrequired: CustomEvent<{ types: string[] }>;
    bell: CustomEvent<Record<string, never>>;
  }

  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | WebSocket, options?: RfbOptions);
    viewOnly: boolean;
    focusOnClick: boolean;
    clipViewport: boolean;
    dragViewport: boolean;
    scaleViewport: boolean;
    resizeSession: boolean;
    showDotCursor: boolean;
    background: string;
    qualityLevel: number;
    compressionLevel: number;
    readonly capabilities: { power?: boolean };
    disconnect(): void;
    focus(options?: FocusOptions): void;
    blur(): void;
    clipboardPasteFrom(text: string): void;
    sendCtrlAltDel(): void;
    sendKey(keysym: number, code: string | null, down?: boolean): void;
    getImageData(): ImageData;
    toDataURL(type?: string, encoderOptions?: number): string;
    addEventListener<K extends keyof RfbEventMap>(type: K, listener: (ev: RfbEventMap[K]) => void): void;
    removeEventListener<K extends keyof RfbEventMap>(type: K, listener: (ev: RfbEventMap[K]) => void): void;
  }
}
