// Functions that run inside a page (Playwright sends their source to page.evaluate), so each is
// self-contained: no imports, no closures. They read and write one origin's storage: what
// Playwright's own storage state does not cover (sessionStorage, which it does not save; storage
// of a tab opened before the server attached) and loading into a live browser, which Playwright
// only does by replacing everything (context.setStorageState clears every cookie and origin).

export interface NameValue {
  name: string;
  value: string;
}

/** One IndexedDB database as Playwright's storageState({indexedDB: true}) writes it. */
export interface IdbDatabase {
  name: string;
  version: number;
  stores: {
    name: string;
    autoIncrement: boolean;
    keyPath?: string;
    keyPathArray?: string[];
    records: { key?: unknown; keyEncoded?: unknown; value?: unknown; valueEncoded?: unknown }[];
    indexes: { name: string; keyPath?: string; keyPathArray?: string[]; multiEntry: boolean; unique: boolean }[];
  }[];
}

/** The page's localStorage or sessionStorage, as name/value pairs. */
export function readStorage(kind: "localStorage" | "sessionStorage"): NameValue[] {
  const s = window[kind];
  const out: NameValue[] = [];
  for (let i = 0; i < s.length; i++) {
    const name = s.key(i);
    if (name !== null) out.push({ name, value: s.getItem(name) ?? "" });
  }
  return out;
}

/** Sets each pair into the page's localStorage or sessionStorage (other keys stay). */
export function writeStorage(arg: { kind: "localStorage" | "sessionStorage"; items: NameValue[] }): number {
  const s = window[arg.kind];
  for (const { name, value } of arg.items) s.setItem(name, value);
  return arg.items.length;
}

/**
 * Puts saved IndexedDB records into the page's origin: a missing database or store is made
 * (opening one version up when needed), records are `put` (a saved key replaces the live one;
 * others stay). Values Playwright could not keep as plain JSON come encoded; they are decoded
 * here with the same rules as Playwright's serializer (dates, maps, sets, typed arrays, …).
 * Answers the databases that could not be opened (another tab holds an old version open).
 */
export async function writeIndexedDb(dbs: IdbDatabase[]): Promise<string[]> {
  const done = <T,>(r: IDBRequest<T>) =>
    new Promise<T>((resolve, reject) => {
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
  const typed: Record<string, any> = {
    i8: Int8Array, ui8: Uint8Array, ui8c: Uint8ClampedArray, i16: Int16Array, ui16: Uint16Array, i32: Int32Array,
    ui32: Uint32Array, f32: Float32Array, f64: Float64Array, bi64: BigInt64Array, bui64: BigUint64Array,
  };
  const bytes = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const decode = (v: any, refs: Map<number, unknown>): unknown => {
    if (v === null || typeof v !== "object") return v;
    if ("ref" in v) return refs.get(v.ref);
    if ("v" in v) return ({ null: null, NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity, "-0": -0 } as Record<string, unknown>)[v.v];
    if ("d" in v) return new Date(v.d);
    if ("u" in v) return new URL(v.u);
    if ("bi" in v) return BigInt(v.bi);
    if ("r" in v) return new RegExp(v.r.p, v.r.f);
    if ("e" in v) return Object.assign(new Error(v.e.m), { name: v.e.n, stack: v.e.s });
    if ("ta" in v) return new typed[v.ta.k](bytes(v.ta.b).buffer);
    if ("ab" in v) return bytes(v.ab.b).buffer;
    const fill = <T,>(made: T, f: (m: T) => void) => (refs.set(v.id, made), f(made), made);
    if ("a" in v) return fill([] as unknown[], (m) => v.a.forEach((x: unknown) => m.push(decode(x, refs))));
    if ("m" in v) return fill(new Map(), (m) => v.m.forEach((x: any) => m.set(decode(x.k, refs), decode(x.v, refs))));
    if ("s" in v) return fill(new Set(), (m) => v.s.forEach((x: unknown) => m.add(decode(x, refs))));
    if ("o" in v) return fill({} as Record<string, unknown>, (m) => v.o.forEach((x: any) => x.k !== "__proto__" && (m[x.k] = decode(x.v, refs))));
    return undefined;
  };
  const failed: string[] = [];
  for (const info of dbs) {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("blocked")), 5000));
    try {
      let db = await Promise.race([done(indexedDB.open(info.name)), timeout]);
      const missing = info.stores.filter((s) => !db.objectStoreNames.contains(s.name));
      if (missing.length || db.version < info.version) {
        const version = Math.max(db.version + 1, info.version);
        db.close();
        const open = indexedDB.open(info.name, version);
        open.onupgradeneeded = () => {
          for (const s of missing) {
            const store = open.result.createObjectStore(s.name, { autoIncrement: s.autoIncrement, keyPath: s.keyPathArray ?? s.keyPath ?? null });
            for (const ix of s.indexes) store.createIndex(ix.name, ix.keyPathArray ?? ix.keyPath ?? "", { unique: ix.unique, multiEntry: ix.multiEntry });
          }
        };
        db = await Promise.race([done(open), timeout]);
      }
      const tx = db.transaction(info.stores.map((s) => s.name), "readwrite");
      for (const s of info.stores) {
        const store = tx.objectStore(s.name);
        for (const r of s.records) {
          const value = "valueEncoded" in r ? decode(r.valueEncoded, new Map()) : r.value;
          const key = "keyEncoded" in r ? decode(r.keyEncoded, new Map()) : r.key;
          if (store.keyPath === null) store.put(value, key as IDBValidKey);
          else store.put(value);
        }
      }
      await new Promise<void>((resolve, reject) => {
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(tx.error);
        tx.onabort = () => reject(tx.error);
      });
      db.close();
    } catch {
      failed.push(info.name);
    }
  }
  return failed;
}
