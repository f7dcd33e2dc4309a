-- Ends a request: a compare-and-set of its state from `open` to `resolved`.
-- Guarantees: the first ending wins and is kept; every later one is told the winner (`lost`).
-- A timeout is refused before the deadline by Redis's clock (`early`, with the time left), and
-- never applies to a request without one. An answer or decline at or after the deadline loses
-- to the timeout given in ARGV[4], which is recorded instead (`late`).
-- The ending that is kept is sealed onto the session's audit trail; one that loses is not.
-- The ending that is kept has its notifications kept in the session's outbox in the same step:
-- the winner's, or for a late answer those of the timeout recorded instead.
-- KEYS: 1 the request's hash, 2 the session's sequence, 3 the session's trail, 4 its head,
--       5 the session's outbox.
-- ARGV: 1 id, 2 kind (answer, timeout or withdraw), 3 the resolution (JSON),
--       4 the timeout's resolution for a late answer, or '', 5 channel, 6 publish command,
--       7 the ending's entry tail, 8 its digest, 9 the late timeout's entry tail, 10 its
--       digest, 11 the trail's retention in ms, 12 the seal (chain.lua),
--       13 how many notifications the ending has (N), then N pairs of an id and its JSON,
--       then the late timeout's notifications as pairs, to the end.
local f = redis.call('HMGET', KEYS[1], 'state', 'deadline', 'resolution', 'resolved')
if not f[1] then
  return {'unknown'}
end
if f[1] == 'resolved' then
  return {'lost', f[3] or '', f[4] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(f[2])
local resolution = ARGV[3]
local verdict = 'won'
local tail, digest, seal = ARGV[7], ARGV[8], ARGV[12]
if ARGV[2] == 'timeout' then
  if not deadline then
    return {'early', ''}
  end
  if now < deadline then
    return {'early', string.format('%.0f', deadline - now)}
  end
elseif ARGV[2] == 'answer' and deadline and now >= deadline and ARGV[4] ~= '' then
  resolution = ARGV[4]
  verdict = 'late'
  tail, digest = ARGV[9], ARGV[10]
  -- The node's proposal is the ending's hash, not the timeout's: this entry is hashed here.
  seal = string.match(seal, '^[^|]*')
end
local notified = tonumber(ARGV[13]) or 0
local first, last = 14, 13 + 2 * notified
if verdict == 'late' then
  first, last = 14 + 2 * notified, #ARGV
end
for i = first, last, 2 do
  redis.call('HSET', KEYS[5], ARGV[i], ARGV[i + 1])
end
local at = string.format('%.0f', now)
audit_append(KEYS[3], KEYS[4], tail, digest, at, ARGV[11], seal)
redis.call('HSET', KEYS[1], 'state', 'resolved', 'resolution', resolution, 'resolved', at)
local seq = redis.call('INCR', KEYS[2])
redis.call(ARGV[6], ARGV[5], seq .. audit_noted .. '\nresolved\n' .. ARGV[1] .. '\n' .. at .. '\n' .. resolution)
return {verdict, resolution, at, audit_took}
