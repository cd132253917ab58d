// A `__proto__` key in a request body. JSON.parse makes it an ordinary own key, but zod 4's
// z.record skips it without checking it against the key schema (and an object spread or
// Object.assign would set a prototype with it): `spec.apps.__proto__` would be dropped in silence,
// a label of that name lost. No field of ours is called that, so such a body is refused.

type Node = { v: unknown; key: string; up: Node | null };

/** Where the first `__proto__` key in `value` is (a dotted path, ending in it, cut to its ends when long); undefined when none. */
export function protoKeyAt(value: unknown): string | undefined {
  // A loop, and each node linked to its parent rather than holding its path: a body nested
  // thousands deep must neither overflow the stack nor cost its depth squared.
  const stack: Node[] = [{ v: value, key: "", up: null }];
  while (stack.length) {
    const node = stack.pop()!;
    const v = node.v;
    if (!v || typeof v !== "object") continue;
    if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, "__proto__")) return pathOf({ v: null, key: "__proto__", up: node });
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) stack.push({ v: (v as Record<string, unknown>)[keys[i]!], key: keys[i]!, up: node });
  }
  return undefined;
}

/** How much of a path a message names: its start (where) and its end (the `__proto__`). */
const PATH_MAX = 200;

function pathOf(node: Node): string {
  const keys: string[] = [];
  for (let n: Node | null = node; n?.up; n = n.up) keys.push(n.key);
  const path = keys.reverse().join(".");
  // A body nested thousands deep would make a 400 message as long as the body.
  return path.length <= PATH_MAX ? path : `${path.slice(0, PATH_MAX / 2)}…${path.slice(-PATH_MAX / 2)}`;
}
