-- POST /waitlist/entries: a walk-in, or with BENCH_BOOKING=1 a booking at
-- one of the slots in BENCH_SLOTS (ISO timestamps, one per line, spread
-- over the rest of the local day), each request with a fresh
-- Idempotency-Key and a realistic body (name, phone, party size, notes,
-- service, a custom field, an external reference).  BENCH_PATH sends the
-- same requests elsewhere (the INSERT baseline).  BENCH_MAX stops after
-- that many successes (to enqueue an exact number of events).
local common = dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local path = common.env("BENCH_PATH", "/v1/external/waitlist/entries")
local run = common.env("BENCH_RUN", "run")
local queue = common.env("BENCH_QUEUE", "que_missing")
local service = common.env("BENCH_SERVICE")
local field = common.env("BENCH_FIELD")
local booking = common.env("BENCH_BOOKING", "0") == "1"
local names = { "Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra",
  "Barbara Liskov", "Ken Thompson", "Dennis Ritchie", "Margaret Hamilton" }
local notes = { "window seat if possible", "celebrating a birthday",
  "high chair needed", "allergic to peanuts", "" }
local slots, n, stop = nil, 0, nil

function init(args)
  math.randomseed(os.time() * 100 + (tid or 0))
  if booking then slots = common.lines(common.env("BENCH_SLOTS")) end
  stop = common.stopper()
end

function request()
  n = n + 1
  local id = string.format("%s-%d-%d", run, tid or 0, n)
  local parts = {
    string.format('"queueId":"%s"', queue),
    string.format('"fullName":"%s %d"', names[math.random(#names)], n),
    string.format('"phone":"+1555%07d"', math.random(0, 9999999)),
    string.format('"partySize":%d', math.random(1, 6)),
    string.format('"externalReference":"ext-%s"', id),
  }
  local note = notes[math.random(#notes)]
  if note ~= "" then parts[#parts + 1] = string.format('"notes":"%s"', note) end
  if service then parts[#parts + 1] = string.format('"serviceTypeId":"%s"', service) end
  if field then
    parts[#parts + 1] = string.format('"customData":{"%s":"%s"}', field,
      math.random(2) == 1 and "in" or "out")
  end
  if booking then
    parts[#parts + 1] = '"isBooking":true'
    parts[#parts + 1] = string.format('"scheduledFor":"%s"', slots[math.random(#slots)])
  end
  local body = "{" .. table.concat(parts, ",") .. "}"
  return wrk.format("POST", path, common.headers({
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = "bench-" .. id,
  }), body)
end

function response(status, headers, body)
  common.show_failure(status, body)
  if stop then stop(status) end
end
