-- Records an event that changes nothing else (a refused answer, a personal link issued).
-- KEYS: 1 the session's trail, 2 its head.
-- ARGV: 1 the entry's tail, 2 its digest, 3 the trail's retention in ms, 4 the seal (chain.lua).
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return audit_append(KEYS[1], KEYS[2], ARGV[1], ARGV[2], now, ARGV[3], ARGV[4])
