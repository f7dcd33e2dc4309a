-- Forgets a resolved request (its agent acknowledged it, or its retention ran out).
-- Guarantees: only a resolved request is deleted (`still_open` otherwise: the id was asked anew
-- since); deleting an absent one is not an error (`unknown`), so acks are idempotent. With a
-- retention in ARGV[4], only a request resolved at least that long ago by Redis's clock.
-- An acknowledgement (ARGV[5] not empty) that deletes is sealed onto the audit trail.
-- KEYS: 1 the request's hash, 2 the session's ids, 3 the session's sequence,
--       4 the session's trail, 5 its head.
-- ARGV: 1 id, 2 channel, 3 publish command, 4 retention in ms or '',
--       5 the `acked` entry's tail or '', 6 its digest, 7 the trail's retention in ms, 8 the
--       seal (chain.lua).
local f = redis.call('HMGET', KEYS[1], 'state', 'resolved')
if not f[1] then
  return 'unknown'
end
if f[1] ~= 'resolved' then
  return 'still_open'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[4] ~= '' then
  if now < tonumber(f[2]) + tonumber(ARGV[4]) then
    return 'kept'
  end
end
if ARGV[5] ~= '' then
  audit_append(KEYS[4], KEYS[5], ARGV[5], ARGV[6], string.format('%.0f', now), ARGV[7], ARGV[8])
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local seq = redis.call('INCR', KEYS[3])
redis.call(ARGV[3], ARGV[2], seq .. audit_noted .. '\nforgot\n' .. ARGV[1])
return 'done'
