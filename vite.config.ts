import { reactRouter } from "@react-router/dev/vite";
import tailwindcss from "@tailwindcss/vite";
import { defineConfig } from "vite";
import { fileURLToPath } from "node:url";

export default defineConfig({
  plugins: [tailwindcss(), reactRouter()],
  resolve: { alias: { "~": fileURLToPath(new URL("./app", import.meta.url)) } },
  optimizeDeps: {
    // The dependency scan follows route imports into *.server.ts; keep native and
    // Docker modules out of the browser pre-bundle.
    exclude: ["dockerode", "better-sqlite3", "pg", "tar-fs"],
    include: ["@novnc/novnc", "@xterm/xterm", "socket.io-client"],
  },
});
