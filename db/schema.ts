import type { ColumnType, Generated } from "kysely";

// Times are epoch milliseconds; JSON columns hold text so SQLite and PostgreSQL agree.

export interface BoxTable {
  id: string;
  owner: string | null;
  runtime: string;
  runtime_ref: string | null;
  spec_digest: string;
  spec_json: string;
  placement_json: string;
  image: string | null;
  state: string;
  reason: string | null;
  screens: number;
  width: number;
  height: number;
  persistent: number;
  created_at_ms: number;
  expires_at_ms: number;
  idle_timeout_secs: number | null;
  last_used_ms: number;
  removed_at_ms: number | null;
  /** The box's desktop: 1 at launch, +1 each time a stopped box resumes (its viewer URLs name it). */
  desktop: ColumnType<number, number | undefined, number>;
  /** A name people give the box (the console, PATCH /v1/boxes/{id}); not part of its spec. */
  name: ColumnType<string | null, string | null | undefined, string | null>;
  /** Labels, a JSON object of strings (filterable in the console); not part of its spec. */
  labels_json: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1: record a screen whenever a person holds it (PATCH /v1/boxes/{id}); not part of its spec. */
  record_takeovers: ColumnType<number, number | undefined, number>;
  /** Who created it: `user:<id>`, `key:<id>` or `server` (issuerOf). */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** That person's or key's name when the box was created. */
  created_by_name: ColumnType<string | null, string | null | undefined, string | null>;
  /** Its start: phases with times, build progress and the last log lines (BoxStart as JSON). */
  start_json: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1 while the box waits, unowned, in the warm pool (app/models/pool.server.ts); 0 otherwise. */
  pooled: ColumnType<number, number | undefined, number>;
  /**
   * The server process (SERVER_ID) starting the box, or keeping it in its warm pool: another
   * server leaves it alone while that one is alive. Null on boxes from before migration 0020.
   */
  server_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface EventTable {
  seq: Generated<number>;
  at_ms: number;
  kind: string;
  owner: string | null;
  box_id: string | null;
  runtime: string | null;
  data_json: string | null;
}

export interface UserTable {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  is_admin: number;
  created_at_ms: number;
  /** The last time this person used the console (written at most once a minute). */
  last_seen_ms: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface SessionTable {
  id: string;
  user_id: string;
  workspace_id: string | null;
  created_at_ms: number;
  expires_at_ms: number;
}

export interface WorkspaceTable {
  id: string;
  name: string;
  created_at_ms: number;
}

export interface MembershipTable {
  workspace_id: string;
  user_id: string;
  role: string;
  created_at_ms: number;
}

export interface InvitationTable {
  id: string;
  workspace_id: string;
  email: string;
  role: string;
  created_by: string;
  created_at_ms: number;
  expires_at_ms: number;
  accepted_at_ms: number | null;
}

export interface ApiKeyTable {
  id: string;
  hash: string;
  prefix: string;
  workspace_id: string;
  name: string;
  created_by: string;
  created_at_ms: number;
  expires_at_ms: number | null;
  last_used_ms: number | null;
  revoked_at_ms: number | null;
}

export interface SettingTable {
  key: string;
  value: string;
}

/** One box's trace: the next sequence number outlives pruned entries, so seq never restarts. */
export interface TraceTable {
  box_id: string;
  next_seq: number;
  started_at_ms: number;
  last_at_ms: number;
}

export interface TraceEntryTable {
  box_id: string;
  seq: number;
  at_ms: number;
  actor: string;
  event: string;
  screen: number | null;
  frame: string | null;
  data_json: string | null;
}

/**
 * A frame PNG, stored once by content hash. On SQLite (`local`) the bytes are a file under the
 * state directory and `png` is null; on PostgreSQL they are `png` (docs/decisions/0020).
 */
export interface TraceFrameTable {
  hash: string;
  bytes: number;
  created_at_ms: number;
  last_ref_ms: number;
  png: ColumnType<Buffer | null, Buffer | null | undefined, Buffer | null>;
}

/** A new image a workspace made the server build (the build limit counts these). */
export interface ImageBuildTable {
  owner: string;
  image: string;
  at_ms: number;
}

/** A workspace's named secret (`owner`: a workspace id, or "server"); the value only sealed. */
export interface SecretTable {
  owner: string;
  name: string;
  sealed: string;
  created_at_ms: number;
  updated_at_ms: number;
}

/** A saved browser state (cookies and storage as JSON), sealed; `size` is its JSON's bytes. */
export interface BrowserStateTable {
  owner: string;
  name: string;
  sealed: string;
  size: number;
  created_at_ms: number;
  updated_at_ms: number;
}

/** A runtime an operator added (the built-in one is not stored); its secrets only sealed. */
export interface RuntimeTable {
  name: string;
  provider: string;
  fields_json: string;
  /** The names of the secrets set, a JSON array (what GET shows instead of values). */
  secret_names: string;
  /** All its secrets as one sealed JSON object; null when it has none. */
  sealed: string | null;
  created_at_ms: number;
  updated_at_ms: number;
}

/** An image built (or being built) on a runtime; `digest` is its tag's hash. */
export interface ImageTable {
  runtime: string;
  digest: string;
  /** The full reference, such as `holm-x11:3f2a…`. */
  image: string;
  /** `building`, `failed` or `built`. */
  state: string;
  reason: string | null;
  /** The ImageRequest (features, packages) as JSON: what a resumed build builds. */
  request_json: string;
  spec_digest: string | null;
  /** The workspace that asked for it; null for the server token or a box launch. */
  owner: string | null;
  created_at_ms: number;
  built_at_ms: number | null;
}

/** A workspace's webhook target (docs/decisions/0018); the secret only sealed. */
export interface WebhookTable {
  id: string;
  owner: string;
  url: string;
  kinds_json: string;
  sealed_secret: string;
  /** The secret before the last rotation, sealed; it also signs until `previous_until_ms`. */
  sealed_previous_secret: string | null;
  previous_until_ms: number | null;
  enabled: number;
  created_by: string;
  created_at_ms: number;
  updated_at_ms: number;
}

/** One delivery of an event to a webhook: `pending` until a 2xx (`delivered`) or 24 h (`failed`). */
export interface WebhookDeliveryTable {
  id: string;
  webhook_id: string;
  event_seq: number;
  kind: string;
  body: string;
  status: string;
  attempts: number;
  created_at_ms: number;
  next_at_ms: number | null;
  last_at_ms: number | null;
  last_status: number | null;
  latency_ms: number | null;
  error: string | null;
  replay_of: string | null;
  /** The server sending it now, until `claimed_until_ms` (a dead sender's claim lapses). */
  claimed_by: ColumnType<string | null, string | null | undefined, string | null>;
  claimed_until_ms: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface Database {
  box: BoxTable;
  event: EventTable;
  user: UserTable;
  session: SessionTable;
  workspace: WorkspaceTable;
  membership: MembershipTable;
  invitation: InvitationTable;
  api_key: ApiKeyTable;
  setting: SettingTable;
  trace: TraceTable;
  trace_entry: TraceEntryTable;
  trace_frame: TraceFrameTable;
  image_build: ImageBuildTable;
  secrets: SecretTable;
  browser_states: BrowserStateTable;
  runtime: RuntimeTable;
  image: ImageTable;
  webhook: WebhookTable;
  webhook_delivery: WebhookDeliveryTable;
  takeover: TakeoverTable;
  idempotency: IdempotencyTable;
  browser_profile: BrowserProfileTable;
  direct_ticket: DirectTicketTable;
  trace_recording: TraceRecordingTable;
  trace_recording_part: TraceRecordingPartTable;
  box_typed_secret: BoxTypedSecretTable;
  direct_password: DirectPasswordTable;
  browser_restart_seen: BrowserRestartSeenTable;
}

/** How far the server has read a box's log for its browsers' restarts (0025): the last line's time. */
export interface BrowserRestartSeenTable {
  box_id: string;
  through_ms: Timestamp;
}

/** A password box's viewer password epoch (0024; no row: 0). */
export interface DirectPasswordTable {
  box_id: string;
  epoch: number;
}

/** A secret value typed into a box, sealed: masked in answers about the box (0023). */
export interface BoxTypedSecretTable {
  box_id: string;
  tag: string;
  sealed: string;
  created_at_ms: number;
}

/** Who holds a screen (docs/decisions/0021). */
export interface TakeoverTable {
  box_id: string;
  screen: number;
  owner: string | null;
  by: string;
  exclusive: number;
  since_ms: Timestamp;
  alive_until_ms: Timestamp;
  guard_at_ms: Timestamp;
  /** The path in the box of the recording this takeover started (the box's `record_takeovers`). */
  recording: ColumnType<string | null, string | null | undefined, string | null>;
}

/** What an idempotency key answered, or who is answering it (`outcome` null). */
export interface IdempotencyTable {
  id: string;
  body_hash: string;
  at_ms: Timestamp;
  server_id: string;
  outcome: string | null;
}

/** A named browser profile (`placement.profile`) and the box that last took it. */
export interface BrowserProfileTable {
  owner: string;
  name: string;
  runtime: string;
  volume: string;
  holder: string | null;
  created_at_ms: Timestamp;
  last_used_ms: Timestamp;
  /** Bytes of its volume when a box last let it go (migration 0022); null until measured. */
  size_bytes: ColumnType<number | null, number | null | undefined, number | null>;
  measured_at_ms: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Who holds direct viewer tickets for a box, and until when (migration 0019). */
export interface DirectTicketTable {
  box_id: string;
  issuer: string;
  expires_at_ms: Timestamp;
}

/** A screen recording copied out of its box into the trace (migration 0017). */
export interface TraceRecordingTable {
  id: string;
  box_id: string;
  screen: number;
  fps: number;
  started_at_ms: Timestamp;
  stopped_at_ms: Timestamp;
  bytes: Timestamp;
  path: string;
}

/** A recording's bytes, in parts (migration 0021: RECORDING_PART_BYTES each but the last). */
export interface TraceRecordingPartTable {
  recording_id: string;
  n: number;
  data: Buffer;
}

export type Timestamp = ColumnType<number, number, number>;
