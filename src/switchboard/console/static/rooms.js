// The Rooms view: the caller's rooms with their role, each opening to its members (by email). Owners
// and managers add and remove members and change the room's name and description; owners delete it;
// those who may create rooms get a form for a new one.

import { call, get, getAll } from "./api.js";
import { announce, confirmButton, field, formatTime, formPanel, h, put, showError, table } from "./dom.js";
import { learnPeople, personName } from "./people.js";

const ROLES = ["member", "manager", "viewer", "owner"];

function newRoomForm(done, cancel) {
  const name = h("input", { required: true, maxlength: "200", autocomplete: "off" });
  const description = h("input", { maxlength: "2000", autocomplete: "off" });
  const errors = h("div");
  const form = h(
    "form",
    { class: "panel", "aria-label": "New room" },
    field("Room name", name),
    field("Description", description),
    errors,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Save room"),
      " ",
      h("button", { type: "button", onclick: cancel }, "Cancel"),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const payload = { name: name.value.trim() };
    if (description.value.trim()) payload.description = description.value.trim();
    try {
      const room = await call("POST", "/working-groups", payload);
      done(room);
    } catch (error) {
      showError(errors, error);
    }
  });
  return form;
}

function addMemberForm(room, done) {
  const user = h("input", {
    required: true,
    autocomplete: "off",
    pattern: "[0-9a-fA-F\\-]{36}",
    placeholder: "the user's id (a UUID)",
  });
  // Only an owner may make someone an owner.
  const roles = room.role === "owner" ? ROLES : ROLES.filter((role) => role !== "owner");
  const role = h(
    "select",
    {},
    roles.map((name) => h("option", { value: name }, name)),
  );
  const errors = h("div");
  const form = h(
    "form",
    { class: "panel", "aria-label": "Add member" },
    field("User ID", user),
    field("Role", role),
    errors,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add member")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await call("POST", `/working-groups/${room.id}/members`, {
        user_id: user.value.trim(),
        role: role.value,
      });
      form.reset();
      await done("Member added");
    } catch (error) {
      showError(errors, error);
    }
  });
  return form;
}

function editRoomForm(room, done, cancel) {
  const name = h("input", { required: true, maxlength: "200", autocomplete: "off", value: room.name });
  const description = h("input", { maxlength: "2000", autocomplete: "off", value: room.description || "" });
  const submit = () =>
    call("PATCH", `/working-groups/${room.id}`, {
      name: name.value.trim(),
      description: description.value.trim() || null,
    });
  const fields = [field("Room name", name), field("Description", description)];
  return formPanel(`Edit ${room.name}`, fields, "Save room", submit, done, cancel);
}

async function roomDetail(ctx, id, body) {
  const room = await get(`/working-groups/${encodeURIComponent(id)}`);
  const manages = ctx.can.write && !ctx.me.delegated && ["owner", "manager"].includes(room.role);
  const messages = h("div");
  const holder = h("div");
  const panel = h("div");
  const rerender = async (said) => {
    await roomDetail(ctx, room.id, body);
    announce(said);
  };
  const roomActions = h(
    "div",
    { class: "actions" },
    manages
      ? h(
          "button",
          {
            type: "button",
            "aria-label": `Edit ${room.name}`,
            onclick: () => put(panel, editRoomForm(room, () => rerender("Room saved"), () => put(panel))),
          },
          "Edit room",
        )
      : null,
    " ",
    manages && room.role === "owner"
      ? confirmButton(
          "Delete room",
          `Delete ${room.name}`,
          async () => {
            await call("DELETE", `/working-groups/${room.id}`);
            announce("Room deleted");
            location.hash = "#/rooms";
          },
          (error) => showError(messages, error),
        )
      : null,
  );
  async function refresh(said) {
    if (said) announce(said);
    const members = await getAll(`/working-groups/${room.id}/members`);
    await learnPeople(members.map((member) => member.user_id));
    const rows = members.map((member) => {
      const me = member.user_id === ctx.me.user_id;
      const removable = manages && (room.role === "owner" || member.role !== "owner");
      const who = personName(ctx, member.user_id, { full: true });
      return [
        who,
        member.role,
        formatTime(member.created_at),
        removable
          ? confirmButton(
              "Remove",
              `Remove ${me ? "yourself" : personName(ctx, member.user_id)}`,
              async () => {
                await call("DELETE", `/working-groups/${room.id}/members/${member.user_id}`);
                await refresh("Member removed");
              },
              (error) => showError(messages, error),
            )
          : "",
      ];
    });
    put(holder, table(`Members of ${room.name}`, ["User", "Role", "Added", "Actions"], rows, "No members."));
  }
  put(
    body,
    h("p", {}, h("a", { href: "#/rooms" }, "All rooms")),
    h("h3", {}, room.name),
    room.description ? h("p", { class: "hint" }, room.description) : null,
    h("p", {}, `Your role: ${room.role}`),
    manages ? roomActions : null,
    panel,
    manages ? addMemberForm(room, refresh) : null,
    messages,
    holder,
  );
  await refresh();
}

export async function roomsView(ctx, body, params) {
  if (params.length) {
    await roomDetail(ctx, decodeURIComponent(params[0]), body);
    return;
  }
  const panel = h("div");
  const rooms = await getAll("/working-groups");
  const create = ctx.can.createRoom
    ? h(
        "button",
        {
          type: "button",
          onclick: () =>
            put(
              panel,
              newRoomForm(
                (room) => {
                  location.hash = `#/rooms/${room.id}`;
                },
                () => put(panel),
              ),
            ),
        },
        "New room",
      )
    : null;
  const rows = rooms.map((room) => [
    h("a", { href: `#/rooms/${room.id}` }, room.name),
    room.role,
    room.description || "",
    formatTime(room.created_at),
  ]);
  put(
    body,
    create ? h("div", { class: "actions" }, create) : null,
    panel,
    table("Rooms", ["Room", "Your role", "Description", "Created"], rows, "You are in no room yet."),
  );
}
