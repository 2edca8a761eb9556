-- Shared by the wrk scripts of bench/run (loaded with dofile).  Defines
-- setup() (numbers the threads: global tid in each) and done() (prints
-- one machine-readable "BENCH {...}" line that bench/run parses; wrk's
-- own --latency table is printed too).  Settings come from BENCH_*
-- environment variables set by bench/run.

local common = {}

function common.env(name, default)
  local v = os.getenv(name)
  if v == nil or v == "" then return default end
  return v
end

-- The lines of a file, without empty ones.
function common.lines(path)
  local t = {}
  for line in io.lines(path) do
    if line ~= "" then t[#t + 1] = line end
  end
  return t
end

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"rps":%.1f,"p50_us":%d,' ..
    '"p90_us":%d,"p99_us":%d,"max_us":%d,"non2xx":%d,"socket_errors":%d}\n',
    summary.requests, summary.duration,
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, e.status, e.connect + e.read + e.write + e.timeout))
end

-- Request headers: wrk.format() uses the table it is given instead of
-- wrk.headers (which holds -H, the Authorization header), so scripts that
-- add headers start from a copy of wrk.headers.
function common.headers(extra)
  local h = {}
  for k, v in pairs(wrk.headers) do h[k] = v end
  for k, v in pairs(extra) do h[k] = v end
  return h
end

-- Shows the first failed response of a thread (scripts that define
-- response() call it), so that a run full of errors says why.
local shown = false
function common.show_failure(status, body)
  if shown or (status >= 200 and status < 300) then return end
  shown = true
  io.stderr:write(string.format("first failure: %d %s\n", status, body or ""))
end

-- Stops this thread after `max` successful responses (BENCH_MAX split
-- over BENCH_THREADS), for runs that must create an exact number of
-- things rather than run for a time.
function common.stopper()
  local max = tonumber(common.env("BENCH_MAX", "0"))
  if max == 0 then return nil end
  local per = math.ceil(max / tonumber(common.env("BENCH_THREADS", "1")))
  local ok, bad = 0, 0
  return function(status)
    if status >= 200 and status < 300 then ok = ok + 1 else bad = bad + 1 end
    -- Give up rather than run on when requests keep failing.
    if ok >= per or bad > 100 then wrk.thread:stop() end
  end
end

return common
