import type { Migration, MigrationProvider } from "kysely/migration";
import { boxes } from "./0001-boxes";
import { accounts } from "./0002-accounts";
import { trace } from "./0003-trace";
import { imageBuilds } from "./0004-image-builds";
import { desktopGeneration } from "./0005-desktop-generation";
import { secretsStates } from "./0006-secrets-states";
import { consoleColumns } from "./0007-console";
import { pool } from "./0008-pool";
import { runtimes } from "./0009-runtimes";
import { webhooks } from "./0010-webhooks";
import { webhookSecretRotation } from "./0012-webhook-secret-rotation";
import { traceFramePng } from "./0013-trace-frame-png";
import { traceAppend } from "./0014-trace-append";
import { cluster } from "./0015-cluster";
import { profiles } from "./0016-profiles";
import { recordings } from "./0017-recordings";
import { takeoverRecording } from "./0018-takeover-recording";
import { directTickets } from "./0019-direct-tickets";
import { serverOwnership } from "./0020-server-ownership";
import { recordingParts } from "./0021-recording-parts";
import { profileSize } from "./0022-profile-size";
import { boxTypedSecrets } from "./0023-box-typed-secrets";
import { directPassword } from "./0024-direct-password";
import { browserRestarts } from "./0025-browser-restarts";

// Listed here, not read from disk, so the migrations travel inside the server bundle.
const migrations: Record<string, Migration> = {
  "0001-boxes": boxes,
  "0002-accounts": accounts,
  "0003-trace": trace,
  "0004-image-builds": imageBuilds,
  "0005-desktop-generation": desktopGeneration,
  "0006-secrets-states": secretsStates,
  "0007-console": consoleColumns,
  "0008-pool": pool,
  "0009-runtimes": runtimes,
  "0010-webhooks": webhooks,
  "0012-webhook-secret-rotation": webhookSecretRotation,
  "0013-trace-frame-png": traceFramePng,
  "0014-trace-append": traceAppend,
  "0015-cluster": cluster,
  "0016-profiles": profiles,
  "0017-recordings": recordings,
  "0018-takeover-recording": takeoverRecording,
  "0019-direct-tickets": directTickets,
  "0020-server-ownership": serverOwnership,
  "0021-recording-parts": recordingParts,
  "0022-profile-size": profileSize,
  "0023-box-typed-secrets": boxTypedSecrets,
  "0024-direct-password": directPassword,
  "0025-browser-restarts": browserRestarts,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
