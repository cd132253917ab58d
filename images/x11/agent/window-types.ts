// A top-level window as the agent reports it (windows.ts lists them; screen.ts keeps the last list).
export interface WindowInfo {
  /** X window id as "0x" + 8 hex digits, as wmctrl prints it. */
  id: string;
  title: string;
  class: string;
  instance: string;
  pid: number | null;
  /** Client area on the screen, decorations excluded. */
  x: number;
  y: number;
  width: number;
  height: number;
  active: boolean;
  minimised: boolean;
  maximised: boolean;
}
