-- One server, many sites (make bench-pool): replays the list hsbench/poolmix.py wrote, one `host path` per line,
-- in order, round and round, each request with that line's Host. args: [1] the list file, [2] a fixed Host for
-- every request, or "-" for each line's own (the single-site server gets the same paths with one Host, so only the
-- server differs). Every request string is built once in init(), so request() costs one table lookup: the client
-- must stay cheap enough to saturate the server.
local reqs = {}
local i = 0

function init(args)
  local list, fixed = args[1], args[2]
  if fixed == "-" or fixed == "" then
    fixed = nil
  end
  for line in io.lines(list) do
    local host, path = line:match("^(%S+) (%S+)$")
    if host then
      reqs[#reqs + 1] = wrk.format("GET", path, { Host = fixed or host })
    end
  end
  if #reqs == 0 then
    error("no requests in " .. tostring(list))
  end
end

function request()
  i = i % #reqs + 1
  return reqs[i]
end
