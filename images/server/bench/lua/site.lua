-- The real-site mix (make bench-site): replays the URL list built by hsbench/sitemap.py (one path per line:
-- each page followed by its assets) in order, over and over, with a browser's Accept-Encoding.
-- args: [1] the URL list file, [2] the Accept-Encoding value.
-- Every request string is built once in init(), so request() costs one table lookup: the client must stay cheap
-- enough to saturate the server. Responses are spread over the connections as they free up, so the proportions
-- of the mix are exact while one connection's sequence is not one browser's.
local reqs = {}
local i = 0

function init(args)
  local list, accept = args[1], args[2]
  local headers = { ["Accept-Encoding"] = accept }
  for line in io.lines(list) do
    if line ~= "" then
      reqs[#reqs + 1] = wrk.format("GET", line, headers)
    end
  end
  if #reqs == 0 then
    error("no URLs in " .. tostring(list))
  end
end

function request()
  i = i % #reqs + 1
  return reqs[i]
end
