// Workspace roles, shared by the server and the console's components.
export const ROLES = ["owner", "admin", "member", "viewer"] as const;
export type Role = (typeof ROLES)[number];
const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

export function atLeast(role: Role, need: Role): boolean {
  return RANK[role] >= RANK[need];
}
