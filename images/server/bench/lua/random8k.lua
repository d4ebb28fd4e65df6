-- Requests one of the 1,000 distinct 8 KiB files at random, keep-alive.
-- The request strings are built once per thread in init(), so request() costs one table lookup:
-- the client must stay cheap enough to saturate the server.
local reqs = {}

function init(args)
  local n = tonumber(args[1]) or 1000
  for i = 0, n - 1 do
    reqs[#reqs + 1] = wrk.format("GET", string.format("/8k/%04d.bin", i))
  end
  -- wrk runs init once per thread; a fresh table address makes the seeds differ between threads
  math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 65536))
end

function request()
  return reqs[math.random(#reqs)]
end
