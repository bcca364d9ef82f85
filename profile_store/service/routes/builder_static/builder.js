// The audience builder: criteria -> a query tree -> live estimate, daily chart, saved audiences.
//
// The criteria combine left to right: ((A op B) op C) ..., where op is AND (intersection),
// OR (union) or AND NOT (difference). Every request goes to this same service with the API
// key the user entered (kept in sessionStorage, for this tab only).
"use strict";

const state = {
  key: "",
  catalog: null, // GET /v1/discovery/apps
  attributes: new Map(), // "app\u0000event" -> discovery answer
  criteria: [], // {id, element}
  nextId: 1,
  estimateSeq: 0,
  asked: null, // the criteria's query last sent for an estimate, as JSON
  saved: [],
};

const $ = (selector, root = document) => root.querySelector(selector);
const MAX_DAYS = 366; // the days a criterion may cover, as the API allows

function text(tag, content, className) {
  const element = document.createElement(tag);
  element.textContent = content;
  if (className) element.className = className;
  return element;
}

function formatCount(value) {
  return Number(value).toLocaleString("en-US");
}

async function api(method, path, body) {
  const options = { method, headers: { "X-API-Key": state.key } };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  if (response.status === 204) return null;
  const answer = await response.json().catch(() => ({ error: "bad_response", message: "not JSON" }));
  if (!response.ok) {
    const error = new Error(answer.message || response.statusText);
    error.status = response.status;
    error.path = answer.path;
    error.code = answer.error;
    // A refusal's causes (each with its leaf's JSON path) and the days proposed instead.
    error.causes = answer.causes || [];
    error.answerableRange = answer.answerable_range || null;
    error.shiftDays = answer.answerable_shift_days || null;
    throw error;
  }
  return answer;
}

// --- messages ---------------------------------------------------------------------------------
//
// What went wrong, said as a marketer would, with what to do next; the API's own words (error
// code, message, JSON path) stay one click away behind "Technical details".

function dataRange() {
  const days = (state.catalog && state.catalog.built_days) || [];
  return days.length ? `${days[0]} to ${days[days.length - 1]}` : null;
}

function plainError(error) {
  const range = dataRange();
  const message = error.message || "";
  if (error.status === 401) return "This API key was not accepted. Check it and connect again.";
  if (error.status === 403) return "Your API key does not give access to this app.";
  if (error.status === 502 || error.status === 503 || error.status === 504) {
    return "The audience data cannot be reached right now. Try again in a minute; if it lasts, tell your administrator.";
  }
  if (error.code === "unanswerable_query") {
    if (/no day is built/.test(message)) {
      return range
        ? `Some of these days have no data yet. Choose days from ${range}.`
        : "No day has data yet: the daily run has not processed any.";
    }
    if (/daily chart covers at most/.test(message)) {
      return "The daily chart shows at most 92 days. Choose a shorter range.";
    }
    return "This audience cannot be counted over these days. Choose other days.";
  }
  if (error.code === "invalid_query" || error.code === "invalid_request") {
    return fieldMessage(error.path, error.message, error.code === "invalid_query");
  }
  if (error.code === "duplicate_name") return "An audience with this name exists already. Choose another name.";
  if (error.code === "segment_taken") return "This segment id is already in use. Choose another segment id.";
  if (error.code === "concurrent_change") return "Someone else is changing this audience right now. Try again in a moment.";
  if (error.code === "unknown_audience") return "This audience no longer exists (it was deleted). The list is up to date again.";
  if (error.status === 400) return `What was sent is not valid: ${error.message}.`;
  return "Something went wrong. Try again; if it lasts, tell your administrator.";
}

// The fields of a criterion and of a saved audience, as the page labels them, by the last step
// of the API's JSON path.
const FIELD_NAMES = {
  app_id: "App",
  event_type: "Event",
  last_days: "the last … days with data",
  date_from: "from (first day)",
  date_to: "to (last day)",
  min_count: "at least … times",
  attributes: "attribute filter",
  name: "Name",
  segment: "Segment id",
  ttl_days: "TTL (days)",
};

// The field a JSON path names: "$.intersection[1].last_days" -> "last_days".
function fieldOf(path) {
  const steps = (path || "").replace(/\[[^\]]*\]/g, "").split(".");
  return steps.find((step) => step === "attributes") || steps.at(-1);
}

// "Criterion B, the last … days with data: 400 days is more than the 366 ..." for a query's
// path; "Segment id: ..." for a saved audience's field.
function fieldMessage(path, problem, inQuery) {
  const field = fieldOf(path);
  const name = FIELD_NAMES[field];
  const index = inQuery ? criterionAt(queryPath(path)) : -1;
  const where = [index >= 0 ? `Criterion ${labelOf(index)}` : "", name || ""].filter(Boolean).join(", ");
  const range = /range of (\d+) days exceeds (\d+)/.exec(problem || "");
  let plain = problem || "not valid";
  if (range) plain = `${formatCount(Number(range[1]))} days is more than the ${range[2]} days a criterion can cover`;
  else if (field === "segment") plain = "enter 1-64 letters, digits, _ . or -";
  else if (field === "ttl_days") plain = "enter a number of days, more than 0 and at most 3,650";
  else if (field === "min_count") plain = "enter a whole number, 1 or more";
  else if (/^after date_to/.test(problem || "")) plain = "the first day is after the last day";
  return `${where || "This audience"}: ${plain}.`;
}

// A path into a body's query ("$.query.union[0]") as a path into the query ("$.union[0]").
function queryPath(path) {
  return (path || "").startsWith("$.query") ? `$${path.slice("$.query".length)}` : path;
}

// The index of the criterion a query's JSON path points into (its leaf or a field of it), or -1.
function criterionAt(path) {
  if (!path || !state.lastAsked) return -1;
  let index = -1;
  leafEntries(state.lastAsked).forEach((entry, i) => {
    if (path === entry.path || path.startsWith(`${entry.path}.`) || path.startsWith(`${entry.path}[`)) {
      index = i;
    }
  });
  return index;
}

// Shows ``error`` (an API error) or a plain ``text`` in ``container``.
function showMessage(container, error, words) {
  const plain = text("span", words === undefined ? plainError(error) : words);
  if (!error) {
    container.replaceChildren(plain);
    return;
  }
  container.replaceChildren(plain, technicalDetails(error));
}

function technicalDetails(error) {
  const details = document.createElement("details");
  details.className = "technical";
  const facts = [error.code || `HTTP ${error.status || "?"}`, error.message];
  if (error.path) facts.push(`at ${error.path}`);
  details.append(text("summary", "Technical details"), text("code", facts.join(": ")));
  return details;
}

// --- refusals ---------------------------------------------------------------------------------
//
// Why the sketches cannot count an audience, per criterion, in a marketer's words beside the
// criterion each cause belongs to, and the days every criterion can be counted over, taken with
// one button. A cause names its leaf by JSON path; the tree's leaves are the criteria in order.

function isRefusal(error) {
  return error.code === "unanswerable_query" && error.causes.length > 0;
}

function plural(count, word) {
  return `${formatCount(count)} ${word}${count === 1 ? "" : "s"}`;
}

// Days as runs of consecutive days: "2026-10-29 to 2026-10-31, 2026-11-04".
function shownDays(days) {
  const runs = [];
  for (const day of [...days].sort()) {
    const run = runs.at(-1);
    if (run && addDays(run[1], 1) === day) run[1] = day;
    else runs.push([day, day]);
  }
  const shown = runs.slice(0, 5).map(([first, last]) => (first === last ? first : `${first} to ${last}`));
  const more = runs.slice(5).reduce((count, [first, last]) => count + daysBetween(first, last) + 1, 0);
  return shown.join(", ") + (more ? ` and ${plural(more, "more day")}` : "");
}

// The keep rule's figures of the first trimmed day, as the API's message gives them.
function trimFigures(cause) {
  const measured = cause.measured[0];
  if (!measured) return "";
  const values = `${formatCount(measured.distinct_values)} different values`;
  const window = plural(measured.window_days, "day");
  if (cause.reason === "too_many_values") {
    return ` (${values} in ${window}, more than the ${formatCount(measured.max_distinct)} that can be filtered on)`;
  }
  return ` (${values} in ${plural(measured.appearances, "event")} over ${window})`;
}

function causeSentence(cause, eventType) {
  const days = shownDays(cause.days);
  switch (cause.reason) {
    case "not_built":
      return `No data yet for ${days}.`;
    case "never_seen":
      return `No event ${eventType ? `of ${eventType} ` : ""}carried ${cause.attribute} on ${days}.`;
    case "too_many_values":
    case "values_too_distinct":
      return `${cause.attribute} has too many different values to filter on${trimFigures(cause)} on ${days}.`;
    default: // not_kept: on days built before the sketches recorded which of the two
      return `${cause.attribute} cannot be filtered on ${days}: it had too many different values, or was not recorded.`;
  }
}

function proposalSentence(error) {
  const range = error.answerableRange;
  if (!range) {
    const filters = [...new Set(error.causes.map((cause) => cause.attribute).filter(Boolean))];
    if (filters.length) {
      const which = filters.length === 1 ? "filter" : "filters";
      return `No nearby range of days can be counted. Remove the ${which} on ${filters.join(", ")} to count this audience.`;
    }
    const data = dataRange();
    return `No nearby range of days can be counted. ${data ? `Choose days from ${data}.` : "No day has data yet."}`;
  }
  const days =
    range.date_from === range.date_to
      ? `This day can be counted: ${range.date_from}`
      : `These days can be counted: ${range.date_from} to ${range.date_to}`;
  const shift = error.shiftDays;
  if (!shift) return `${days}.`;
  const direction = shift < 0 ? "earlier" : "later";
  return `${days}: the whole audience moves ${plural(Math.abs(shift), "day")} ${direction}, every criterion by as much.`;
}

// Each cause beside its criterion; in the answer, which criteria are refused and the proposal,
// with the button that takes it.
function showRefusal(error, tree) {
  const entries = leafEntries(tree);
  const byCriterion = new Map();
  const elsewhere = [];
  for (const cause of error.causes) {
    const index = entries.findIndex((entry) => entry.path === cause.leaf);
    const sentence = causeSentence(cause, index >= 0 ? entries[index].leaf.event_type : null);
    if (index < 0) elsewhere.push(sentence);
    else byCriterion.set(index, [...(byCriterion.get(index) || []), sentence]);
  }
  for (const [index, sentences] of byCriterion) byCriterion.set(index, [...new Set(sentences)]);
  for (const [index, sentences] of byCriterion) {
    const element = state.criteria[index].element;
    $(".criterion-error", element).replaceChildren(causeList(sentences));
    element.classList.add("invalid");
  }
  const labels = [...byCriterion.keys()].sort((a, b) => a - b).map(labelOf);
  const who =
    labels.length === 1
      ? `Criterion ${labels[0]}`
      : labels.length
        ? `Criteria ${labels.slice(0, -1).join(", ")} and ${labels.at(-1)}`
        : "This audience";
  const parts = [text("span", `${who} cannot be counted on all of these days.`, "summary")];
  if (elsewhere.length) parts.push(causeList([...new Set(elsewhere)]));
  const proposal = text("span", proposalSentence(error), "proposal");
  proposal.id = "proposal";
  parts.push(proposal);
  if (error.answerableRange) {
    const use = text("button", "Use these days", "use-days");
    use.type = "button";
    use.setAttribute("aria-describedby", "proposal");
    // Only for the criteria it was proposed for: once they change, a new answer is on its way.
    use.addEventListener("click", () => {
      if (JSON.stringify(buildTree()) === JSON.stringify(tree)) useDays(error);
    });
    parts.push(use);
  }
  parts.push(technicalDetails(error));
  $("#answer-error").replaceChildren(...parts);
}

function causeList(sentences) {
  const list = document.createElement("ul");
  list.className = "causes";
  list.append(...sentences.map((sentence) => text("li", sentence, "cause")));
  return list;
}

// Every criterion to from/to over the proposed days: moved by the shift when the proposal is
// the whole audience moved (each criterion keeps its own days), else the proposed range.
function useDays(error) {
  const range = error.answerableRange;
  for (const { element } of state.criteria) {
    let [from, to] = [range.date_from, range.date_to];
    if (error.shiftDays) {
      [from, to] = datesOf(element).map((day) => addDays(day, error.shiftDays));
    }
    $(".mode-range", element).checked = true;
    fillDays($(".date-from", element), from);
    fillDays($(".date-to", element), to);
    syncDates(element);
  }
  if (state.criteria.length) $(".date-from", state.criteria[0].element).focus();
  runEstimate();
}

// A refusal of a saved audience in the overlap: its name and its causes (``path`` is
// ``$.ids[i]``; ``ids`` the audiences asked for).
function overlapRefusal(error, ids) {
  const index = Number((/^\$\.ids\[(\d+)\]/.exec(error.path || "") || [])[1]);
  const audience = state.saved.find((saved) => saved.id === ids[index]);
  if (!audience) return undefined;
  const entries = leafEntries(audience.query);
  const sentences = error.causes.map((cause) => {
    const entry = entries.find((e) => e.path === cause.leaf);
    return causeSentence(cause, entry ? entry.leaf.event_type : null);
  });
  const once = [...new Set(sentences)];
  return `"${audience.name}" cannot be counted. ${once.join(" ")} Open it to change its days or filters.`;
}

function clearMessages() {
  for (const box of document.querySelectorAll(".message")) box.replaceChildren();
}

// --- connecting -------------------------------------------------------------------------------

async function connect(key) {
  state.key = key;
  $("#key-status").textContent = "connecting…";
  try {
    state.catalog = await api("GET", "/v1/discovery/apps");
  } catch (error) {
    if (error.status === 401) {
      showMessage($("#key-status"), error, "unknown API key: check it and connect again");
    } else showMessage($("#key-status"), error);
    $("#builder").hidden = true;
    $("#welcome").hidden = false;
    return;
  }
  sessionStorage.setItem("apiKey", key);
  $("#key-status").textContent = plural(state.catalog.apps.length, "app");
  $("#data-days").textContent = dataRange()
    ? `Data ready for ${dataRange()}; later days appear once the daily run has processed them.`
    : "No day has data yet: the daily run has not processed any.";
  $("#builder").hidden = false;
  $("#welcome").hidden = true;
  clearCriteria();
  if (state.catalog.apps.length) addCriterion();
  await loadSaved();
}

function appOf(appId) {
  return state.catalog.apps.find((app) => app.app_id === appId);
}

// An app's event types in a criterion's event select; one saved but not offered is kept.
function fillEvents(element, appId, chosen) {
  const app = appOf(appId);
  const offered = app ? app.event_types.map((e) => e.event_type) : [];
  if (chosen && !offered.includes(chosen)) offered.push(chosen);
  $(".event-type", element).replaceChildren(...offered.map((e) => new Option(e, e)));
  if (chosen) $(".event-type", element).value = chosen;
}

// --- criteria ---------------------------------------------------------------------------------

// A new criterion is of the app of the criterion above (the first app for the first).
function addCriterion(preset) {
  const above = state.criteria.at(-1);
  const app = appOf(above ? $(".app", above.element).value : state.catalog.apps[0]?.app_id);
  if (!app) return;
  const element = $("#criterion-template").content.firstElementChild.cloneNode(true);
  const id = state.nextId++;
  element.dataset.id = id;
  for (const radio of element.querySelectorAll("input[type=radio]")) radio.name = `mode-${id}`;
  const apps = $(".app", element);
  apps.replaceChildren(...state.catalog.apps.map((a) => new Option(a.app_id, a.app_id)));
  apps.value = app.app_id;
  fillEvents(element, app.app_id);
  const events = $(".event-type", element);
  const latest = state.catalog.latest_built_day;
  for (const picker of element.querySelectorAll(".date-from, .date-to")) {
    fillDays(picker, latest);
    // A kept day without data goes once another day is picked: it cannot be picked again.
    picker.addEventListener("change", () => fillDays(picker, picker.value));
  }
  const lastDays = $(".last-days", element);
  lastDays.max = String(Math.max(1, Math.min(MAX_DAYS, state.catalog.built_days.length)));
  lastDays.value = defaultLastDays(app);
  for (const control of element.querySelectorAll(".mode-last, .mode-range, .last-days")) {
    control.addEventListener("input", () => syncDates(element));
    control.addEventListener("change", () => syncDates(element));
  }
  $("#criteria").append(element);
  state.criteria.push({ id, element });
  element.addEventListener("input", scheduleEstimate);
  element.addEventListener("change", scheduleEstimate);
  events.addEventListener("change", () => {
    $(".filters", element).replaceChildren();
    scheduleEstimate();
  });
  apps.addEventListener("change", () => {
    fillEvents(element, apps.value);
    $(".filters", element).replaceChildren();
    scheduleEstimate();
  });
  $(".remove", element).addEventListener("click", () => removeCriterion(id));
  $(".add-filter", element).addEventListener("click", () => addFilter(element));
  if (preset) applyPreset(element, preset);
  syncDates(element);
  relabel();
  scheduleEstimate();
  return element;
}

function daysBetween(first, last) {
  return Math.round((Date.parse(last) - Date.parse(first)) / 86400000);
}

function addDays(day, count) {
  return new Date(Date.parse(day) + count * 86400000).toISOString().slice(0, 10);
}

// The days from the first to the latest with data: days without data (a gap) are listed but
// cannot be picked, and say why; a saved audience's day outside them is kept, marked.
function fillDays(select, chosen) {
  const built = new Set(state.catalog.built_days);
  const days = state.catalog.built_days;
  const options = [];
  if (days.length) {
    for (let day = days[0]; day <= days[days.length - 1]; day = addDays(day, 1)) {
      const option = new Option(built.has(day) ? day : `${day} (no data)`, day);
      option.disabled = !built.has(day);
      options.push(option);
    }
  }
  if (chosen && !options.some((option) => option.value === chosen)) {
    options.push(new Option(`${chosen} (no data)`, chosen));
  }
  select.replaceChildren(...options);
  if (chosen) select.value = chosen;
}

// One date mode at a time: the other's fields are disabled. "The last N days with data" is
// shown as the dates it covers: the N latest of the days with data.
function syncDates(element) {
  const last = $(".mode-last", element).checked;
  $(".last-days", element).disabled = !last;
  $(".date-from", element).disabled = last;
  $(".date-to", element).disabled = last;
  const span = $(".last-span", element);
  const latest = state.catalog.latest_built_day;
  const count = Number($(".last-days", element).value);
  const built = state.catalog.built_days.length;
  if (!last || !latest || !Number.isInteger(count) || count < 1 || count > built) {
    span.textContent = "";
    return;
  }
  const [first] = datesOf(element);
  span.textContent = count === 1 ? `= ${latest}` : `= ${first} to ${latest}`;
}

// The first and last day a criterion covers: the last N days with data are the N latest of
// the days the API reports as built (a day without data is not counted).
function datesOf(element) {
  if (!$(".mode-last", element).checked) {
    return [$(".date-from", element).value, $(".date-to", element).value];
  }
  const built = state.catalog.built_days;
  const count = Number($(".last-days", element).value);
  return [built[Math.max(0, built.length - count)], state.catalog.latest_built_day];
}

// The number of days with data a saved ``last_days`` (calendar days ending on the latest day
// with data) covers; the calendar count itself when it reaches before the first of them.
function builtDaysIn(lastDays) {
  const built = state.catalog.built_days;
  const first = addDays(state.catalog.latest_built_day, -(lastDays - 1));
  if (!built.length || first < built[0]) return lastDays;
  return built.filter((day) => day >= first).length;
}

// A week of days with data, or fewer when the app has fewer: a new criterion answers.
function defaultLastDays(app) {
  const first = app.event_types.map((e) => e.first_day).sort()[0];
  const built = state.catalog.built_days.filter((day) => !first || day >= first);
  return Math.max(1, Math.min(7, built.length));
}

// New criteria boxes (another key, app or opened audience) show their answer afresh.
function clearCriteria() {
  $("#criteria").replaceChildren();
  state.criteria = [];
  state.asked = null;
}

function removeCriterion(id) {
  const index = state.criteria.findIndex((c) => c.id === id);
  if (index < 0) return;
  state.criteria[index].element.remove();
  state.criteria.splice(index, 1);
  relabel();
  scheduleEstimate();
}

function relabel() {
  state.criteria.forEach((criterion, index) => {
    $(".label", criterion.element).textContent = labelOf(index);
    $(".connector", criterion.element).hidden = index === 0;
  });
}

function labelOf(index) {
  return String.fromCharCode(65 + (index % 26));
}

async function attributesOf(appId, eventType) {
  const cacheKey = `${appId}\u0000${eventType}`;
  if (!state.attributes.has(cacheKey)) {
    const path =
      `/v1/discovery/apps/${encodeURIComponent(appId)}` +
      `/event-types/${encodeURIComponent(eventType)}/attributes`;
    state.attributes.set(cacheKey, api("GET", path));
  }
  return state.attributes.get(cacheKey);
}

// A filter row; with a preset (an opened audience), the row keeps the saved attribute and value
// even when discovery does not offer them (trimmed, never seen, or discovery failed), so the
// query shown is the query saved, and the estimate says why it cannot be answered.
async function addFilter(element, preset) {
  const appId = $(".app", element).value;
  const eventType = $(".event-type", element).value;
  const item = document.createElement("li");
  item.className = "filter";
  const names = document.createElement("select");
  names.className = "attribute-name";
  names.setAttribute("aria-label", "attribute");
  const values = document.createElement("select");
  values.className = "attribute-value";
  values.setAttribute("aria-label", "value");
  const remove = text("button", "✕", "remove-filter");
  remove.type = "button";
  remove.setAttribute("aria-label", "remove filter");
  item.append(names, text("span", " = "), values, remove);
  $(".filters", element).append(item);
  remove.addEventListener("click", () => {
    item.remove();
    scheduleEstimate();
  });
  let discovered;
  try {
    discovered = await attributesOf(appId, eventType);
  } catch (error) {
    showMessage($(".criterion-error", element), error);
    discovered = { attributes: [], day: null };
    if (!preset) return;
  }
  let attributes = discovered.attributes;
  if (preset && !attributes.some((a) => a.name === preset.name)) {
    attributes = [...attributes, { name: preset.name, values: [] }];
  }
  if (!attributes.length) {
    item.replaceChildren(text("span", `no kept attributes for ${eventType}`, "hint"));
    return;
  }
  const fillValues = () => {
    const attribute = attributes.find((a) => a.name === names.value) || { values: [] };
    const options = attribute.values.map(
      (v) => new Option(`${v.value} (~${formatCount(v.users)} users on ${discovered.day})`, v.value),
    );
    const saved = preset && names.value === preset.name ? preset.value : null;
    if (saved !== null && !attribute.values.some((v) => v.value === saved)) {
      options.push(new Option(saved, saved));
    }
    values.replaceChildren(...options);
  };
  names.replaceChildren(...attributes.map((a) => new Option(a.name, a.name)));
  if (preset) names.value = preset.name;
  fillValues();
  if (preset) values.value = preset.value;
  names.addEventListener("change", () => {
    fillValues();
    scheduleEstimate();
  });
  scheduleEstimate();
}

async function applyPreset(element, preset) {
  $(".connector", element).value = preset.connector || "intersection";
  const apps = $(".app", element);
  if (!appOf(preset.app_id)) apps.append(new Option(preset.app_id, preset.app_id)); // as saved
  apps.value = preset.app_id;
  fillEvents(element, preset.app_id, preset.event_type);
  if (preset.last_days) {
    $(".mode-last", element).checked = true;
    $(".last-days", element).value = builtDaysIn(preset.last_days);
  } else {
    $(".mode-range", element).checked = true;
    fillDays($(".date-from", element), preset.date_from);
    fillDays($(".date-to", element), preset.date_to);
  }
  syncDates(element);
  $(".min-count", element).value = preset.min_count || 1;
  for (const [name, value] of Object.entries(preset.attributes || {})) {
    await addFilter(element, { name, value });
  }
}

function leafOf(element) {
  const leaf = { app_id: $(".app", element).value, event_type: $(".event-type", element).value };
  if ($(".mode-last", element).checked) {
    // The API's last_days counts calendar days back from the latest day with data: as many as
    // the N latest days with data span (N itself when no day between them lacks data).
    const [first, latest] = datesOf(element);
    leaf.last_days = daysBetween(first, latest) + 1;
  } else {
    leaf.date_from = $(".date-from", element).value;
    leaf.date_to = $(".date-to", element).value;
  }
  const minCount = Number($(".min-count", element).value);
  if (minCount > 1) leaf.min_count = minCount;
  const attributes = {};
  for (const filter of element.querySelectorAll(".filter")) {
    const name = $(".attribute-name", filter);
    const value = $(".attribute-value", filter);
    if (name && value && name.value) attributes[name.value] = value.value;
  }
  if (Object.keys(attributes).length) leaf.attributes = attributes;
  return leaf;
}

// The query tree of the criteria, folded left to right; same operators flatten into one node.
function buildTree() {
  let tree = null;
  state.criteria.forEach(({ element }, index) => {
    const leaf = leafOf(element);
    if (index === 0) {
      tree = leaf;
      return;
    }
    const operator = $(".connector", element).value;
    if (tree[operator]) tree[operator].push(leaf);
    else tree = { [operator]: [tree, leaf] };
  });
  return tree;
}

// Each leaf of a tree with its JSON path, depth first: for the builder's tree, the criteria in
// order.
function leafEntries(tree) {
  const entries = [];
  const walk = (node, path) => {
    const operator = ["union", "intersection", "difference"].find((op) => op in node);
    if (!operator) {
      entries.push({ path, leaf: node });
      return;
    }
    node[operator].forEach((child, i) => walk(child, `${path}.${operator}[${i}]`));
  };
  walk(tree, "$");
  return entries;
}

function expressionOf() {
  const words = { intersection: "AND", union: "OR", difference: "AND NOT" };
  let expression = "";
  state.criteria.forEach(({ element }, index) => {
    const label = labelOf(index);
    if (index === 0) expression = label;
    else {
      const op = words[$(".connector", element).value];
      expression = index === 1 ? `${expression} ${op} ${label}` : `(${expression}) ${op} ${label}`;
    }
  });
  return expression;
}

// --- the live answer --------------------------------------------------------------------------

let estimateTimer = null;

function scheduleEstimate() {
  clearTimeout(estimateTimer);
  estimateTimer = setTimeout(runEstimate, 300);
}

function clearErrors() {
  for (const { element } of state.criteria) {
    $(".criterion-error", element).replaceChildren();
    element.classList.remove("invalid");
    for (const field of element.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
  }
  $("#answer-error").replaceChildren();
}

// The criterion's field a JSON path names, to highlight.
const FIELD_CLASSES = {
  app_id: ".app",
  event_type: ".event-type",
  last_days: ".last-days",
  date_from: ".date-from",
  date_to: ".date-to",
  min_count: ".min-count",
  attributes: ".filters",
};

// The message beside the criterion it is about, which is highlighted with its field.
function markCriterion(index, field, message) {
  const element = state.criteria[index].element;
  element.classList.add("invalid");
  const input = FIELD_CLASSES[field] && $(FIELD_CLASSES[field], element);
  if (input) input.setAttribute("aria-invalid", "true");
  $(".criterion-error", element).replaceChildren(message);
}

function showError(error, tree) {
  if (tree && isRefusal(error)) {
    showRefusal(error, tree);
    return;
  }
  const index = criterionAt(queryPath(error.path));
  if (index < 0) {
    showMessage($("#answer-error"), error);
    return;
  }
  const box = document.createElement("div");
  showMessage(box, error);
  markCriterion(index, fieldOf(error.path), box);
  $("#answer-error").replaceChildren(
    text("span", `Criterion ${labelOf(index)} needs a change before the audience can be counted.`),
  );
}

// What the page can tell before asking: each criterion's number fields. With a problem, every
// criterion that has one is marked (the messages shown before cleared); none changes nothing.
function validCriteria() {
  const built = state.catalog.built_days;
  const problems = [];
  state.criteria.forEach(({ element }, index) => {
    const label = `Criterion ${labelOf(index)}`;
    const minCount = Number($(".min-count", element).value);
    const lastDays = Number($(".last-days", element).value);
    let problem = null;
    if ($(".mode-last", element).checked && !(Number.isInteger(lastDays) && lastDays >= 1)) {
      problem = ["last_days", `${label}, the last … days with data: enter a whole number, 1 or more.`];
    } else if ($(".mode-last", element).checked && lastDays > built.length) {
      const have = built.length === 1 ? "only 1 day has" : `only ${formatCount(built.length)} days have`;
      const most = built.length
        ? `at most ${formatCount(built.length)}; ${have} data so far (${shownDays(built)})`
        : "no day has data yet";
      problem = ["last_days", `${label}, the last … days with data: ${most}.`];
    } else if ($(".mode-last", element).checked && daysBetween(...datesOf(element)) + 1 > MAX_DAYS) {
      problem = ["last_days", `${label}, the last … days with data: these days span more than the ${MAX_DAYS} days a criterion can cover.`];
    } else if (!(Number.isInteger(minCount) && minCount >= 1)) {
      problem = ["min_count", `${label}, at least … times: enter a whole number, 1 or more.`];
    }
    if (problem) problems.push([index, ...problem]);
  });
  if (!problems.length) return true;
  clearErrors();
  for (const [index, field, message] of problems) markCriterion(index, field, text("span", message));
  return false;
}

async function runEstimate() {
  $("#expression").textContent = expressionOf();
  if (!state.criteria.length) return;
  if (!validCriteria()) {
    state.asked = null;
    state.estimateSeq++; // an answer on its way is for criteria since changed
    showNoAnswer();
    $("#answer-error").replaceChildren(text("span", "Correct the highlighted criterion to count this audience."));
    return;
  }
  const tree = buildTree();
  // Criteria that ask nothing new (a field committed after its input events) keep the answer
  // shown, and any technical details the user opened in it.
  const asked = JSON.stringify(tree);
  if (asked === state.asked) return;
  state.asked = asked;
  const seq = ++state.estimateSeq;
  clearErrors();
  state.lastAsked = tree;
  $("#estimate").classList.add("busy");
  try {
    const answer = await api("POST", "/v1/audiences/estimate", tree);
    if (seq !== state.estimateSeq) return;
    $("#estimate").textContent = formatCount(answer.estimate);
    $("#range").textContent = answer.exact
      ? "exact count"
      : `95% range ${formatCount(answer.lower_95)} – ${formatCount(answer.upper_95)}`;
    const first = answer.leaf_dates.map((d) => d.date_from).sort()[0];
    const last = answer.leaf_dates.map((d) => d.date_to).sort().at(-1);
    $("#counted-days").textContent = first === last ? `users seen on ${first}` : `users seen from ${first} to ${last}`;
    $("#warnings").replaceChildren(...answer.warnings.map((w) => text("li", w)));
    state.lastTree = tree;
    drawChart(tree, seq);
  } catch (error) {
    if (seq !== state.estimateSeq) return;
    if (!(error.status >= 400 && error.status < 500)) state.asked = null; // may be asked again
    showNoAnswer();
    showError(error, tree);
  } finally {
    if (seq === state.estimateSeq) $("#estimate").classList.remove("busy");
  }
}

function showNoAnswer() {
  $("#estimate").textContent = "–";
  $("#range").textContent = "";
  $("#counted-days").textContent = "";
  $("#warnings").replaceChildren();
  $("#chart").replaceChildren();
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes, content) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (content !== undefined) element.textContent = content;
  return element;
}

// A round step for about four gridlines up to ``top``: 1, 2 or 5 times a power of ten.
function tickStep(top) {
  const rough = Math.max(1, top / 4);
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough);
}

async function drawChart(tree, seq) {
  let answer;
  try {
    answer = await api("POST", "/v1/audiences/daily", tree);
  } catch (error) {
    if (seq === state.estimateSeq) {
      const box = text("div", "", "hint");
      showMessage(box, error);
      $("#chart").replaceChildren(box);
    }
    return;
  }
  if (seq !== state.estimateSeq) return;
  const days = answer.days;
  const left = 56; // the y-axis: its label and its numbers
  const width = 520;
  const height = 160;
  const step = tickStep(Math.max(1, ...days.map((d) => d.upper_95)));
  const top = step * Math.max(1, Math.ceil(Math.max(1, ...days.map((d) => d.upper_95)) / step));
  const y = (value) => height - (value / top) * height;
  const slot = width / Math.max(days.length, 1);
  const chart = svg("svg", {
    viewBox: `0 -16 ${left + width} ${height + 46}`,
    class: "daily-chart",
    role: "img",
    "aria-labelledby": "chart-title",
    "aria-describedby": "chart-caption",
  });
  const axis = svg("g", { class: "y-axis" });
  for (let value = 0; value <= top; value += step) {
    axis.append(
      svg("line", { x1: left, x2: left + width, y1: y(value), y2: y(value), class: "grid" }),
      svg("text", { x: left - 6, y: y(value) + 3, class: "y-tick" }, formatCount(value)),
    );
  }
  axis.append(
    svg("line", { x1: left, x2: left, y1: 0, y2: height, class: "axis" }),
    svg("text", { x: 14, y: height / 2, class: "axis-label", transform: `rotate(-90 14 ${height / 2})` }, "users"),
  );
  chart.append(axis);
  days.forEach((d, i) => {
    const x = left + i * slot;
    const exact = d.lower_95 === d.upper_95;
    const bar = svg("rect", {
      x: x + slot * 0.15,
      y: y(d.estimate),
      width: slot * 0.7,
      height: height - y(d.estimate),
      class: "bar",
      "data-day": d.day,
      "data-estimate": d.estimate,
    });
    const range = exact ? "exact" : `95% range ${formatCount(d.lower_95)} – ${formatCount(d.upper_95)}`;
    bar.append(svg("title", {}, `${d.day}: ${formatCount(d.estimate)} users (${range})`));
    chart.append(bar);
    const center = x + slot / 2;
    if (!exact) {
      chart.append(
        svg("line", { x1: center, x2: center, y1: y(d.lower_95), y2: y(d.upper_95), class: "whisker" }),
      );
    }
    if (days.length <= 14 || i % Math.ceil(days.length / 10) === 0) {
      chart.append(svg("text", { x: center, y: height + 18, class: "tick" }, d.day.slice(5)));
      chart.append(
        svg("text", { x: center, y: y(d.estimate) - 4, class: "value" }, formatCount(d.estimate)),
      );
    }
  });
  $("#chart").replaceChildren(chart);
}

// "exact" for an exact answer (its bounds are the estimate), else the 95% range.
function rangeOf(answer) {
  if (answer.lower_95 === answer.upper_95) return "exact";
  return `${formatCount(answer.lower_95)} – ${formatCount(answer.upper_95)}`;
}

// --- saved audiences and overlaps -------------------------------------------------------------

async function loadSaved() {
  const answer = await api("GET", "/v1/audiences/saved");
  state.saved = answer.audiences;
  const body = $("#saved-list tbody");
  body.replaceChildren(
    ...state.saved.map((audience) => {
      const row = document.createElement("tr");
      row.dataset.id = audience.id;
      const pick = document.createElement("input");
      pick.type = "checkbox";
      pick.className = "compare";
      pick.setAttribute("aria-label", `compare ${audience.name}`);
      pick.addEventListener("change", updateOverlapButton);
      const name = text("td", audience.name, "name");
      const activation = document.createElement("td");
      activation.append(activationControls(audience));
      const actions = document.createElement("td");
      for (const [label, handler] of [
        ["Open", () => openSaved(audience)],
        ["Rename", () => renameSaved(audience)],
        ["Delete", () => deleteSaved(audience)],
      ]) {
        const button = text("button", label, label.toLowerCase());
        button.type = "button";
        button.setAttribute("aria-label", `${label} ${audience.name}`);
        button.addEventListener("click", handler);
        actions.append(button);
      }
      const cell = document.createElement("td");
      cell.append(pick);
      row.append(cell, name, activation, actions);
      return row;
    }),
  );
  updateOverlapButton();
}

function activationControls(audience) {
  const box = document.createElement("div");
  box.className = "activation";
  const current = audience.activation;
  const segment = document.createElement("input");
  segment.className = "segment";
  segment.placeholder = "segment id";
  segment.maxLength = 64;
  segment.setAttribute("aria-label", `segment id of ${audience.name}`);
  segment.value = current ? current.segment : "";
  // Wide enough for the whole id (monospace: one column per character).
  const fit = () => {
    segment.size = Math.max(16, segment.value.length + 1);
  };
  fit();
  segment.addEventListener("input", fit);
  const ttl = document.createElement("input");
  ttl.type = "number";
  ttl.className = "ttl";
  ttl.min = "1";
  ttl.setAttribute("aria-label", `days a member keeps the segment of ${audience.name}`);
  ttl.value = current ? current.ttl_days : 30;
  const active = Boolean(current && current.active);
  const toggle = text("button", active ? "Deactivate" : "Activate", "activate");
  toggle.type = "button";
  toggle.setAttribute("aria-label", `${active ? "Deactivate" : "Activate"} ${audience.name}`);
  const status = text("div", "", "error message");
  status.setAttribute("role", "status");
  toggle.addEventListener("click", async () => {
    if (
      active &&
      !confirm(
        `Deactivate "${audience.name}"? Profiles stop getting segment ${current.segment} from ` +
          `the next daily run; members keep it until their ${current.ttl_days} days run out.`,
      )
    ) {
      return;
    }
    try {
      await api("PATCH", `/v1/audiences/saved/${audience.id}`, {
        activation: { segment: segment.value, ttl_days: Number(ttl.value), active: !active },
      });
      await loadSaved();
    } catch (error) {
      const field = { segment, ttl_days: ttl }[fieldOf(error.path)];
      if (field && error.status === 400) field.setAttribute("aria-invalid", "true");
      showMessage(status, error);
    }
  });
  const days = text("span", "days");
  box.append(segment, text("span", "TTL"), ttl, days, toggle, status);
  return box;
}

function updateOverlapButton() {
  const picked = document.querySelectorAll("#saved-list .compare:checked").length;
  $("#show-overlap").disabled = picked < 2 || picked > 4;
}

async function saveCurrent(event) {
  event.preventDefault();
  const name = $("#save-name").value;
  if (!validCriteria()) {
    $("#save-status").textContent = "Correct the highlighted criterion before saving.";
    return;
  }
  try {
    await api("POST", "/v1/audiences/saved", { name, query: buildTree() });
    $("#save-status").textContent = `saved "${name}"`;
    $("#save-name").value = "";
    await loadSaved();
  } catch (error) {
    showMessage($("#save-status"), error);
  }
}

async function renameSaved(audience) {
  const name = prompt("New name", audience.name);
  if (!name) return;
  try {
    await api("PATCH", `/v1/audiences/saved/${audience.id}`, { name });
  } catch (error) {
    showMessage($("#save-status"), error);
  }
  await loadSaved();
}

async function deleteSaved(audience) {
  const activation = audience.activation;
  const delivered =
    activation && activation.active
      ? ` Profiles stop getting segment ${activation.segment}; members keep it until their ${activation.ttl_days} days run out.`
      : "";
  if (!confirm(`Delete "${audience.name}"? This cannot be undone.${delivered}`)) return;
  try {
    await api("DELETE", `/v1/audiences/saved/${audience.id}`);
  } catch (error) {
    showMessage($("#save-status"), error);
  }
  await loadSaved();
}

// Loads a saved tree back as criteria when it has the shape the builder writes.
async function openSaved(audience) {
  const presets = [];
  const unfold = (node) => {
    const operator = ["union", "intersection", "difference"].find((op) => op in node);
    if (!operator) {
      presets.push({ ...node });
      return true;
    }
    const [first, ...rest] = node[operator];
    if (!unfold(first)) return false;
    for (const child of rest) {
      if (["union", "intersection", "difference"].some((op) => op in child)) return false;
      presets.push({ ...child, connector: operator });
    }
    return true;
  };
  if (!unfold(audience.query)) {
    $("#save-status").textContent =
      "This audience was made through the API with a shape the builder cannot show: open it with the API.";
    return;
  }
  clearCriteria();
  for (const preset of presets) addCriterion(preset);
}

async function showOverlap() {
  const ids = [...document.querySelectorAll("#saved-list .compare:checked")].map(
    (box) => box.closest("tr").dataset.id,
  );
  let answer;
  try {
    answer = await api("POST", "/v1/audiences/overlap", { ids });
  } catch (error) {
    showMessage($("#save-status"), error, isRefusal(error) ? overlapRefusal(error, ids) : undefined);
    return;
  }
  $("#overlap").hidden = false;
  const names = Object.fromEntries(answer.audiences.map((a) => [a.id, a.name]));
  const rows = [
    ...answer.audiences.map((a) => [a.name, a]),
    ...answer.pairs.map((p) => [`${names[p.first]} ∩ ${names[p.second]}`, p]),
  ];
  $("#overlap-table tbody").replaceChildren(
    ...rows.map(([label, value]) => {
      const row = document.createElement("tr");
      row.append(
        text("td", label),
        text("td", formatCount(value.estimate), "users"),
        text("td", rangeOf(value)),
      );
      return row;
    }),
  );
  drawVenn(answer);
}

// Circles with areas proportional to the audiences; each pair's distance chosen so that the
// lens area matches its intersection (exact for two circles, pairwise for more).
function lensArea(r1, r2, d) {
  if (d >= r1 + r2) return 0;
  if (d <= Math.abs(r1 - r2)) return Math.PI * Math.min(r1, r2) ** 2;
  const a = r1 * r1 * Math.acos((d * d + r1 * r1 - r2 * r2) / (2 * d * r1));
  const b = r2 * r2 * Math.acos((d * d + r2 * r2 - r1 * r1) / (2 * d * r2));
  const c = 0.5 * Math.sqrt((-d + r1 + r2) * (d + r1 - r2) * (d - r1 + r2) * (d + r1 + r2));
  return a + b - c;
}

function distanceFor(r1, r2, overlap) {
  let low = Math.abs(r1 - r2);
  let high = r1 + r2;
  for (let i = 0; i < 60; i++) {
    const mid = (low + high) / 2;
    if (lensArea(r1, r2, mid) > overlap) low = mid;
    else high = mid;
  }
  return (low + high) / 2;
}

function drawVenn(answer) {
  const audiences = answer.audiences;
  const largest = Math.max(1, ...audiences.map((a) => a.estimate));
  const scale = 70 / Math.sqrt(largest / Math.PI);
  const radius = audiences.map((a) => Math.sqrt(a.estimate / Math.PI) * scale);
  const pairOf = (i, j) =>
    answer.pairs.find(
      (p) =>
        (p.first === audiences[i].id && p.second === audiences[j].id) ||
        (p.first === audiences[j].id && p.second === audiences[i].id),
    );
  const centers = [[0, 0]];
  const areaScale = scale * scale;
  const d01 = distanceFor(radius[0], radius[1], pairOf(0, 1).estimate * areaScale);
  centers.push([d01, 0]);
  for (let k = 2; k < audiences.length; k++) {
    const d0 = distanceFor(radius[0], radius[k], pairOf(0, k).estimate * areaScale);
    const d1 = distanceFor(radius[1], radius[k], pairOf(1, k).estimate * areaScale);
    const x = (d0 * d0 - d1 * d1 + d01 * d01) / (2 * (d01 || 1));
    const y = Math.sqrt(Math.max(0, d0 * d0 - x * x)) * (k === 2 ? 1 : -1);
    centers.push([x, y]);
  }
  const xs = centers.map(([x], i) => [x - radius[i], x + radius[i]]).flat();
  const ys = centers.map(([, y], i) => [y - radius[i], y + radius[i]]).flat();
  const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const picture = svg("svg", {
    viewBox: `${minX - 10} ${minY - 10} ${maxX - minX + 20} ${maxY - minY + 20}`,
    class: "venn",
  });
  const colours = ["#2f6fdf", "#e0742c", "#2ca05a", "#a23cc8"];
  audiences.forEach((audience, i) => {
    const [cx, cy] = centers[i];
    const circle = svg("circle", { cx, cy, r: radius[i], fill: colours[i], class: "set" });
    circle.append(svg("title", {}, `${audience.name}: ${formatCount(audience.estimate)} users`));
    picture.append(circle);
  });
  const legend = document.createElement("ul");
  legend.className = "venn-legend";
  audiences.forEach((audience, i) => {
    const item = document.createElement("li");
    const swatch = text("span", "", "swatch");
    swatch.style.background = colours[i];
    item.append(swatch, text("span", `${audience.name}: ${formatCount(audience.estimate)} users`));
    legend.append(item);
  });
  $("#venn").replaceChildren(picture, legend);
}

// --- start ------------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  // A message answers the action before it: the next action (a button, a changed field)
  // clears every message first, so none outlives what it was about. Opening a message's
  // technical details is no action.
  const builder = $("#builder");
  builder.addEventListener(
    "click",
    (event) => {
      if (event.target.closest("button") && !event.target.closest("details")) clearMessages();
    },
    true,
  );
  builder.addEventListener("change", clearMessages, true);
  $("#key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    connect($("#api-key").value.trim());
  });
  $("#add-criterion").addEventListener("click", () => addCriterion());
  $("#save-form").addEventListener("submit", saveCurrent);
  $("#show-overlap").addEventListener("click", showOverlap);
  const remembered = sessionStorage.getItem("apiKey");
  if (remembered) {
    $("#api-key").value = remembered;
    connect(remembered);
  }
});
