-- PATCH /waitlist/entries/{id}/status, toggling entries between waiting
-- and ready.  BENCH_IDS lists entries created waiting at version 1; each
-- thread takes its share and keeps them in a pool of idle entries with
-- their current status and version.  A request takes an idle entry and
-- asks for the other status with the matching expectedStatus and
-- expectedVersion; the response (the entry, with its new version) puts it
-- back.  So every request is a successful status change of an existing
-- entry (row lock, update, history row, event, commit, entry read back),
-- with no two requests on one entry at once.  A failed request loses its
-- entry from the pool (it shows as a non-2xx count).
local common = dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local run = common.env("BENCH_RUN", "run")
local idle, n = {}, 0

function init(args)
  local threads = tonumber(common.env("BENCH_THREADS", "1"))
  for i, id in ipairs(common.lines(common.env("BENCH_IDS"))) do
    if (i - 1) % threads == (tid or 1) - 1 then
      idle[#idle + 1] = { id = id, status = "waiting", version = 1 }
    end
  end
end

function request()
  n = n + 1
  local e = table.remove(idle)
  if e == nil then
    -- Pool exhausted (only after failures): a request that will fail.
    e = { id = "ent_exhausted", status = "waiting", version = 1 }
  end
  local to = e.status == "waiting" and "ready" or "waiting"
  local body = string.format(
    '{"status":"%s","expectedStatus":"%s","expectedVersion":%d}',
    to, e.status, e.version)
  return wrk.format("PATCH", "/v1/external/waitlist/entries/" .. e.id .. "/status", common.headers({
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = string.format("bench-%s-p%d-%d", run, tid or 0, n),
  }), body)
end

function response(status, headers, body)
  common.show_failure(status, body)
  if status ~= 200 then return end
  local id = body:match('"id":"(ent_[^"]+)"')
  local version = tonumber(body:match('"version":(%d+)'))
  local st = body:match('"status":"(%l+)"')
  if id and version and st then
    idle[#idle + 1] = { id = id, status = st, version = version }
  end
end
