#!/usr/bin/env python3
"""Native widgets for the in-box agent (seed 000 "Native widgets"), through AT-SPI with pyatspi.

The agent starts this once and keeps it: one JSON request per line on stdin, one JSON answer per
line on stdout, in order. An answer is {"id", "ok": true, "result"} or {"id", "ok": false, "code",
"message"} with the seed's error codes. Nothing here opens a socket: it talks only to the box's
own accessibility bus, found through the session bus the agent inherited.
"""
import json
import sys
import warnings

import pyatspi
from gi.repository import Atspi

# Bookworm's libatspi names get_collection_iface deprecated and has nothing newer.
warnings.filterwarnings("ignore", category=DeprecationWarning)

MAX_DEPTH = 100
MAX_NODES = 5000


class Refused(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def interfaces(node):
    try:
        return set(pyatspi.utils.listInterfaces(node))
    except Exception:
        return set()


def states(node):
    try:
        return sorted(pyatspi.stateToString(s).replace(" ", "_") for s in node.getState().getStates())
    except Exception:
        return []


def actions(node):
    if "Action" not in interfaces(node):
        return []
    a = node.queryAction()
    return [a.getName(i) for i in range(a.nActions)]


def role(node):
    return node.getRoleName().replace(" ", "_")


def label(node):
    """What names a widget for a person: its labelled-by relation, else the label just before it."""
    try:
        for rel in node.getRelationSet():
            if rel.getRelationType() == pyatspi.RELATION_LABELLED_BY:
                names = [rel.getTarget(i).name for i in range(rel.getNTargets()) if rel.getTarget(i) is not None]
                text = " ".join(n for n in names if n)
                if text:
                    return text
    except Exception:
        pass
    # A form laid out as "label, field" in one container (GTK dialogs often are): the nearest
    # label before the field, in the same parent or the parent's previous sibling.
    try:
        parent = node.parent
        if parent is None:
            return ""
        idx = node.getIndexInParent()
        for i in range(idx - 1, -1, -1):
            sib = parent.getChildAtIndex(i)
            if sib is not None and sib.getRoleName() == "label" and sib.name:
                return sib.name
    except Exception:
        pass
    return ""


def value(node):
    ifs = interfaces(node)
    try:
        if "Text" in ifs and node.getRoleName() in ("text", "entry", "password text", "spin button", "editbar", "paragraph"):
            t = node.queryText()
            if node.getRoleName() == "password text":
                return "•" * t.characterCount
            return t.getText(0, -1)
        if "Value" in ifs:
            return node.queryValue().currentValue
    except Exception:
        pass
    return None


def bounds(node):
    if "Component" not in interfaces(node):
        return None
    try:
        e = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        return {"x": e.x, "y": e.y, "width": e.width, "height": e.height}
    except Exception:
        return None


def describe(node, app, path):
    out = {"role": role(node), "name": node.name or "", "app": app, "path": path, "states": states(node)}
    lab = label(node)
    if lab and lab != out["name"]:
        out["label"] = lab
    if node.description:
        out["description"] = node.description
    acts = actions(node)
    if acts:
        out["actions"] = acts
    v = value(node)
    if v is not None:
        out["value"] = v
    b = bounds(node)
    if b is not None:
        out["bounds"] = b
    return out


def apps(name=None):
    desk = pyatspi.Registry.getDesktop(0)
    found = []
    for i in range(desk.childCount):
        a = desk.getChildAtIndex(i)
        if a is None:
            continue
        if name is None or (a.name or "").lower() == name.lower():
            found.append(a)
    return found


def walk(root, app, depth):
    """Every node under root (itself included), with its path, breadth first, bounded."""
    out = []
    queue = [(root, "", 0)]
    while queue and len(out) < MAX_NODES:
        node, path, d = queue.pop(0)
        out.append((node, path, d))
        if d >= depth:
            continue
        try:
            n = node.childCount
        except Exception:
            continue
        for i in range(min(n, MAX_NODES)):
            c = node.getChildAtIndex(i)
            if c is not None:
                queue.append((c, f"{path}/{i}" if path else str(i), d + 1))
    return out


def tree(req):
    depth = min(int(req.get("depth") or 8), MAX_DEPTH)
    wanted = apps(req.get("app"))
    if req.get("app") and not wanted:
        have = ", ".join(sorted({a.name for a in apps() if a.name})) or "none"
        raise Refused("not_found", f'no application "{req["app"]}" on the accessibility bus (there: {have})')

    def build(node, app, path, d):
        out = describe(node, app, path)
        if d < depth:
            kids = []
            for i in range(min(node.childCount, MAX_NODES)):
                c = node.getChildAtIndex(i)
                if c is not None:
                    kids.append(build(c, app, f"{path}/{i}" if path else str(i), d + 1))
            if kids:
                out["children"] = kids
        return out

    return {"apps": [build(a, a.name, "", 0) for a in wanted]}


# The seed's example asks for role "text"; Chromium calls its text fields "entry".
ROLE_ALIASES = {"text": {"text", "entry", "password_text"}, "entry": {"text", "entry", "password_text"}}


def role_matches(want, have):
    """Whether a role name ("push_button") is the one asked for ("button", "push button")."""
    if not want:
        return True
    have = have.lower()
    want = want.strip().lower().replace(" ", "_")
    return have == want or have.endswith("_" + want) or have in ROLE_ALIASES.get(want, ())


def texts_of(node):
    """The node's name, then its description, then its label: each asked only when needed."""
    yield node.name or ""
    yield node.description or ""
    yield label(node)


def _all_roles():
    out = {}
    for i in range(int(Atspi.Role.LAST_DEFINED)):
        try:
            r = Atspi.Role(i)
        except Exception:
            continue
        out.setdefault(Atspi.role_get_name(r).replace(" ", "_"), r)
    return out


ROLES = _all_roles()


def path_of(node):
    """The node's index path from its application ("0/2/1"), asked of its ancestors."""
    parts = []
    n = node
    for _ in range(MAX_DEPTH):
        parent = n.parent
        if parent is None or n.getRoleName() == "application":
            break
        parts.append(str(n.getIndexInParent()))
        n = parent
    return "/".join(reversed(parts))


def candidates(app, want_role):
    """The app's nodes of the role asked for, through its Collection interface: one call to the
    app instead of a few per node (Chromium's own window alone has hundreds of nodes). An app
    without Collection is walked."""
    roles = [r for name, r in ROLES.items() if role_matches(want_role, name)] if want_role else []
    try:
        col = app.get_collection_iface()
        if col is None:
            raise RuntimeError("no Collection")
        any_ = Atspi.CollectionMatchType.ANY if roles else Atspi.CollectionMatchType.ALL
        rule = Atspi.MatchRule.new(Atspi.StateSet.new([]), Atspi.CollectionMatchType.ALL, {}, Atspi.CollectionMatchType.ALL,
                                   roles, any_, [], Atspi.CollectionMatchType.ALL, False)
        return [(n, None) for n in col.get_matches(rule, Atspi.CollectionSortOrder.CANONICAL, 0, True)]
    except Exception:
        return [(n, p) for n, p, _ in walk(app, app.name, MAX_DEPTH) if role_matches(want_role, role(n))]


def matches(q):
    """Nodes whose name, label or description holds the query (exact ones first), of the role."""
    query = str(q.get("query", "")).strip().lower()
    want_role = q.get("role")
    exact, partial = [], []
    for a in apps():
        for node, path in candidates(a, want_role):
            if node.getRoleName() == "application":
                continue
            hit = "partial" if not query else None
            for t in texts_of(node) if query else ():
                t = t.lower()
                if t == query:
                    hit = "exact"
                    break
                if query in t:
                    hit = "partial"
            if hit is None:
                continue
            found = (node, a.name, path if path is not None else path_of(node))
            (exact if hit == "exact" else partial).append(found)
    return exact + partial, len(exact)


def only(q):
    found, n_exact = matches(q)
    what = f'"{q.get("query")}"' + (f' with role {q["role"]}' if q.get("role") else "")
    if not found:
        raise Refused("not_found", f"no widget matches {what}")
    pool = found[:n_exact] if n_exact else found
    showing = [f for f in pool if "showing" in states(f[0])] or pool
    if len(showing) > 1:
        names = "; ".join(f'{role(n)} "{n.name or label(n)}" in {a}' for n, a, _ in showing[:5])
        raise Refused("failed", f"{len(showing)} widgets match {what}: {names}; say more (role, or the whole name)")
    return showing[0]


def find(req):
    limit = int(req.get("limit") or 20)
    found, _ = matches(req["node"])
    return {"nodes": [describe(n, a, p) for n, a, p in found[:limit]], "total": len(found)}


def focus(req):
    node, app, path = only(req["node"])
    if "Component" not in interfaces(node) or not node.queryComponent().grabFocus():
        raise Refused("failed", f'{role(node)} "{node.name or label(node)}" cannot take the focus')
    return {"node": describe(node, app, path)}


def invoke(req):
    node, app, path = only(req["node"])
    acts = actions(node)
    if not acts:
        raise Refused("unsupported", f'{role(node)} "{node.name or label(node)}" has no actions')
    name = req.get("action") or acts[0]
    if name not in acts:
        raise Refused("bad_request", f'{role(node)} "{node.name or label(node)}" has no action "{name}" (it has: {", ".join(acts)})')
    described = describe(node, app, path)
    if not node.queryAction().doAction(acts.index(name)):
        raise Refused("failed", f'the widget refused "{name}"')
    return {"node": described, "action": name}


def set_value(req):
    node, app, path = only(req["node"])
    v = req["value"]
    ifs = interfaces(node)
    who = f'{role(node)} "{node.name or label(node)}"'
    if isinstance(v, bool):
        st = states(node)
        if "checkable" not in st and "checked" not in st and node.getRoleName() not in ("check box", "toggle button", "radio button", "check menu item"):
            raise Refused("unsupported", f"{who} cannot be checked or unchecked")
        if ("checked" in st) != v:
            acts = actions(node)
            if not acts:
                raise Refused("unsupported", f"{who} has no action to toggle it")
            node.queryAction().doAction(0)
    elif isinstance(v, (int, float)) and "Value" in ifs:
        val = node.queryValue()
        if not (val.minimumValue <= v <= val.maximumValue):
            raise Refused("bad_request", f"{who} takes {val.minimumValue} to {val.maximumValue}, not {v}")
        val.currentValue = v
    elif "EditableText" in ifs:
        if "editable" not in states(node):
            raise Refused("failed", f"{who} is not editable")
        if not node.queryEditableText().setTextContents(str(v)):
            raise Refused("failed", f"{who} did not take the text")
    else:
        raise Refused("unsupported", f"{who} takes no value")
    return {"node": describe(node, app, path)}


OPS = {"tree": tree, "find": find, "focus": focus, "invoke": invoke, "set": set_value}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            op = OPS.get(req.get("op"))
            if op is None:
                raise Refused("bad_request", f'no widget operation "{req.get("op")}"')
            answer = {"id": rid, "ok": True, "result": op(req)}
        except Refused as e:
            answer = {"id": rid, "ok": False, "code": e.code, "message": e.message}
        except Exception as e:  # AT-SPI's own errors (an app gone mid-walk, a bus timeout)
            answer = {"id": rid, "ok": False, "code": "failed", "message": f"AT-SPI: {e}"}
        sys.stdout.write(json.dumps(answer, default=str) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
