-- GET one of the paths listed in BENCH_PATHS (one per line), picked at
-- random per request.  Used for /me, one entry, the externalReference
-- list, the events page and the FastCGI and SELECT baselines.
local common = dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

local reqs

function init(args)
  math.randomseed(os.time() * 100 + (tid or 0))
  reqs = {}
  for _, path in ipairs(common.lines(common.env("BENCH_PATHS"))) do
    reqs[#reqs + 1] = wrk.format("GET", path)
  end
end

function request()
  return reqs[math.random(#reqs)]
end
