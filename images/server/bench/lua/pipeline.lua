-- Sends the 100-byte file pipelined: DEPTH requests written at once on each connection, then waits for
-- all DEPTH responses (wrk counts each response as one request). DEPTH comes from the script args.
local batch

function init(args)
  local depth = tonumber(args[1]) or 16
  local path = args[2] or "/100.html"
  local one = wrk.format("GET", path)
  batch = string.rep(one, depth)
end

function request()
  return batch
end
