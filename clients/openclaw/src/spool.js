// The on-disk copy of the turns waiting for membus. OpenClaw forgets a turn once commitTurn
// answered "committed", and `openclaw agent --local` exits right after its turn: turns kept only
// in memory while membus is unreachable would be lost with the process. Each process writes its
// queue to a file of its own in OpenClaw's state dir; a process that starts takes over the files
// that processes no longer running left (claimed by an atomic rename, so two processes never both
// take one), and sends them first. Sending one twice is harmless: the event id is the Nats-Msg-Id and message
// ids are unique per session on the server.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, openSync, fsyncSync, closeSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

/**
 * @typedef {{ subject: string, payload: any, msgId: string }} PendingEvent
 * @typedef {{ load: () => PendingEvent[], save: (events: PendingEvent[]) => void }} Spool
 */

/**
 * A spool in dir. Failures to read or write it are reported through onError and never thrown:
 * the in-memory queue still works.
 * @param {string} dir @param {(what: string, err: unknown) => void} onError @returns {Spool}
 */
export function createSpool(dir, onError) {
  const own = join(dir, `pending-${process.pid}-${randomBytes(4).toString("hex")}.json`);
  return {
    load() {
      /** @type {PendingEvent[]} */
      const out = [];
      let names;
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        names = readdirSync(dir);
      } catch (err) {
        onError("spool dir", err);
        return out;
      }
      const claimedFiles = [];
      for (const name of names) {
        // claimed-* files are another process's claim in progress, or one that died claiming.
        if (!(name.startsWith("pending-") || name.startsWith("claimed-")) || !name.endsWith(".json") || join(dir, name) === own) continue;
        const pid = Number(name.split("-")[1]);
        if (pid !== process.pid && alive(pid)) continue; // a running process sends its own queue
        const claimed = join(dir, `claimed-${process.pid}-${randomBytes(4).toString("hex")}.json`);
        try {
          renameSync(join(dir, name), claimed); // another process may take it first: then skip it
        } catch {
          continue;
        }
        claimedFiles.push(claimed);
        try {
          const events = JSON.parse(readFileSync(claimed, "utf8"));
          if (Array.isArray(events)) out.push(...events.filter((e) => e && typeof e.subject === "string" && typeof e.msgId === "string"));
        } catch (err) {
          onError(`spool file ${name}`, err);
        }
      }
      if (claimedFiles.length) {
        this.save(out); // ours now, on disk, before the claimed files go
        for (const f of claimedFiles) rmSync(f, { force: true });
      }
      return out;
    },
    save(events) {
      try {
        if (!events.length) {
          rmSync(own, { force: true });
          return;
        }
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        const tmp = `${own}.tmp`;
        writeFileSync(tmp, JSON.stringify(events), { mode: 0o600 });
        const fd = openSync(tmp, "r");
        fsyncSync(fd);
        closeSync(fd);
        renameSync(tmp, own);
      } catch (err) {
        onError("spool write", err);
      }
    },
  };
}

/** @param {number} pid @returns {boolean} */
function alive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {any} */ (err)?.code === "EPERM";
  }
}
