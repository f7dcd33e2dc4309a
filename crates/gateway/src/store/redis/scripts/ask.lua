-- Asks: creates the request if its id is new in the session, atomically.
-- Guarantees: one request per (session, id), ever, until it is forgotten. A second ask with the
-- same questions (same digest) gets the request as it stands; one with other questions gets
-- `conflict`. The times are Redis's own clock, so every node shows one deadline.
-- A new request's `asked` entry is sealed onto the session's audit trail (chain.lua).
-- A new request's notifications are kept in the session's outbox in the same step, so no
-- crash keeps the request and loses them (their index entries were written just before).
-- KEYS: 1 the request's hash, 2 the session's ids (sorted set), 3 the session's sequence,
--       4 the session's trail, 5 its head, 6 the session's outbox.
-- ARGV: 1 id, 2 digest of the questions, 3 body (JSON), 4 timeout in ms or '',
--       5 the session's channel, 6 the publish command (PUBLISH or SPUBLISH),
--       7 the `asked` entry's tail, 8 its digest, 9 the trail's retention in ms, 10 the seal
--       (chain.lua), then the notifications as pairs: 11 an id, 12 its JSON, 13 the next id, ...
local digest = redis.call('HGET', KEYS[1], 'digest')
if digest then
  if digest ~= ARGV[2] then
    return {'conflict'}
  end
  local f = redis.call('HMGET', KEYS[1], 'asked', 'deadline', 'state', 'resolution', 'resolved', 'body', 'follows', 'votes')
  return {'exists', f[1] or '', f[2] or '', f[3] or '', f[4] or '', f[5] or '', f[6] or '', f[7] or '', f[8] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local asked = string.format('%.0f', now)
local deadline = ''
if ARGV[4] ~= '' then
  deadline = string.format('%.0f', now + tonumber(ARGV[4]))
end
local seq = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], 'digest', ARGV[2], 'body', ARGV[3], 'asked', asked,
  'deadline', deadline, 'state', 'open')
redis.call('ZADD', KEYS[2], seq, ARGV[1])
audit_append(KEYS[4], KEYS[5], ARGV[7], ARGV[8], asked, ARGV[9], ARGV[10])
for i = 11, #ARGV, 2 do
  redis.call('HSET', KEYS[6], ARGV[i], ARGV[i + 1])
end
redis.call(ARGV[6], ARGV[5], seq .. audit_noted .. '\nput\n' .. ARGV[1] .. '\n' .. asked .. '\n' .. deadline .. '\n' .. ARGV[3])
return {'created', asked, deadline, tostring(seq), audit_took}
