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

export interface Database {
  box: BoxTable;
  event: EventTable;
}

export type Timestamp = ColumnType<number, number, number>;
