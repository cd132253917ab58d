import { type Kysely, sql } from "kysely";
import type { Migration } from "kysely/migration";
import { FRAME_LOCK, isPostgres } from "../dialect";

// PostgreSQL only (docs/decisions/0020): a batch's trace write as one call, one round trip
// instead of five (begin, lock the head, entries, head, commit). The function locks the box's
// `trace` row (an upsert that returns it), skips the write when `unless_screen`'s last frame is
// already `unless_frame`, numbers the entries from the row, clamps their times so that at_ms
// never decreases, stores new frames (under the shared frame lock that pruning takes alone) and
// moves the row on. SQLite (`local`) does the same in trace-local.server.ts: nothing to make.
export const traceAppend: Migration = {
  async up(db: Kysely<any>) {
    if (!isPostgres(db)) return;
    await sql`
      create or replace function holm_trace_append(
        p_box text, p_now bigint,
        p_actor text[], p_event text[], p_screen int[], p_frame text[], p_data text[], p_at bigint[],
        p_frame_hash text[], p_frame_png bytea[],
        p_unless_screen int, p_unless_frame text
      ) returns table(seq int, at_ms bigint) language plpgsql as $fn$
      #variable_conflict use_column
      declare
        h record;
        s int;
        last_at bigint;
        a bigint;
        started bigint;
      begin
        if coalesce(array_length(p_frame_hash, 1), 0) > 0 then
          perform pg_advisory_xact_lock_shared(${sql.lit(FRAME_LOCK)});
        end if;
        insert into trace as t (box_id, next_seq, started_at_ms, last_at_ms) values (p_box, 0, 0, 0)
          on conflict (box_id) do update set box_id = excluded.box_id
          returning t.next_seq, t.last_at_ms, t.started_at_ms into h;
        if p_unless_screen is not null and (
          select e.frame from trace_entry e
          where e.box_id = p_box and e.screen = p_unless_screen and e.frame is not null
          order by e.seq desc limit 1
        ) is not distinct from p_unless_frame then
          return;
        end if;
        s := h.next_seq;
        last_at := h.last_at_ms;
        for i in 1 .. coalesce(array_length(p_actor, 1), 0) loop
          a := greatest(coalesce(p_at[i], p_now), last_at);
          last_at := a;
          if i = 1 and h.next_seq = 0 then started := a; end if;
          if p_frame[i] is not null then
            -- Always with its bytes: a frame pruned meanwhile is stored whole again.
            insert into trace_frame as f (hash, bytes, created_at_ms, last_ref_ms, png)
              values (p_frame[i], length(p_frame_png[array_position(p_frame_hash, p_frame[i])]), a, a, p_frame_png[array_position(p_frame_hash, p_frame[i])])
              on conflict (hash) do update set last_ref_ms = greatest(excluded.last_ref_ms, f.last_ref_ms);
          end if;
          insert into trace_entry (box_id, seq, at_ms, actor, event, screen, frame, data_json)
            values (p_box, s, a, p_actor[i], p_event[i], p_screen[i], p_frame[i], p_data[i]);
          seq := s;
          at_ms := a;
          return next;
          s := s + 1;
        end loop;
        update trace set next_seq = s, last_at_ms = last_at, started_at_ms = coalesce(started, h.started_at_ms) where box_id = p_box;
      end
      $fn$`.execute(db);
  },
  async down(db: Kysely<any>) {
    if (!isPostgres(db)) return;
    await sql`drop function if exists holm_trace_append`.execute(db);
  },
};
