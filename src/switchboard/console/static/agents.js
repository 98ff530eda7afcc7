// The Agents view: the agents the caller can see, each opening to its versions (retired ones too).

import { call, get, getAll } from "./api.js";
import { announce, confirmButton, formatTime, h, put, showError, table } from "./dom.js";

function mayRetire(ctx, version) {
  return ctx.can.write && (ctx.can.admin || version.created_by === ctx.me.user_id);
}

async function versionsOf(ctx, id, body) {
  const messages = h("div");
  const holder = h("div");
  async function refresh(loaded) {
    const versions = loaded || (await getAll(`/agents/${encodeURIComponent(id)}/versions`));
    const rows = versions.map((version) => [
      version.version,
      version.display_name,
      version.role,
      formatTime(version.created_at),
      version.retired ? `Retired ${formatTime(version.retired_at)}` : "Active",
      !version.retired && mayRetire(ctx, version)
        ? confirmButton(
            "Retire",
            `Retire version ${version.version}`,
            async () => {
              await call(
                "POST",
                `/agents/${encodeURIComponent(id)}/versions/${encodeURIComponent(version.version)}/retire`,
              );
              announce(`Version ${version.version} retired`);
              await refresh();
            },
            (error) => showError(messages, error),
          )
        : "",
    ]);
    put(
      holder,
      table(
        `Versions of ${id}`,
        ["Version", "Display name", "Role", "Created", "Status", "Actions"],
        rows,
        "No versions.",
      ),
    );
  }
  const versions = await getAll(`/agents/${encodeURIComponent(id)}/versions`);
  const newest = versions.find((version) => !version.retired);
  put(
    body,
    h("p", {}, h("a", { href: "#/agents" }, "All agents")),
    h("h3", {}, newest ? `${newest.display_name} (${id})` : id),
    newest ? null : h("p", { class: "hint" }, "Every version of this agent is retired."),
    messages,
    holder,
  );
  await refresh(versions);
}

export async function agentsView(ctx, body, params) {
  if (params.length) {
    await versionsOf(ctx, decodeURIComponent(params[0]), body);
    return;
  }
  const agents = await get("/agents");
  const rows = agents.map((agent) => [
    h("a", { href: `#/agents/${encodeURIComponent(agent.id)}` }, agent.display_name),
    agent.id,
    agent.role,
    agent.version,
    agent.source,
  ]);
  put(
    body,
    table("Agents", ["Agent", "ID", "Role", "Newest version", "Source"], rows, "No agents you can see."),
  );
}
