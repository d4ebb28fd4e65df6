-- A proxy's keep-alive connections carrying requests from many clients: every request names a new client in
-- X-Forwarded-For, the addresses counted up from args[2] (one per request, per thread), so a run of N requests
-- shows the server N distinct addresses. args[1] is the path. For hsbench.fairshare: the server trusts 127.0.0.1
-- as its proxy, so each request's client (guard/forwarded.rs) is its own address, a new fair-share bucket.
-- The request's fixed part is built once in init(); request() formats one address and concatenates.
local head, n

function init(args)
  local path = args[1] or "/100.html"
  local req = wrk.format("GET", path)
  head = req:sub(1, #req - 2) .. "X-Forwarded-For: "
  n = tonumber(args[2]) or 0
end

function request()
  local k = n
  n = n + 1
  -- 11.0.0.0 upwards: public unicast, never loopback, so never the trusted proxy itself
  local a = 11 + math.floor(k / 16777216) % 200
  local b = math.floor(k / 65536) % 256
  local c = math.floor(k / 256) % 256
  return head .. a .. "." .. b .. "." .. c .. "." .. (k % 256) .. "\r\n\r\n"
end
