-- Makes a follow-up (a reminder, an escalation) of an open request, once.
-- Guarantees: only while the request is open, and only the first time (its letter is then in
-- the `follows` field): however many nodes try, one makes it. The follow-up is sealed onto
-- the audit trail and its notifications kept in the session's outbox in the same step; a
-- `followed` notice tells the other nodes (an escalation widens who may answer).
-- KEYS: 1 the request's hash, 2 the session's sequence, 3 the session's trail, 4 its head,
--       5 the session's outbox.
-- ARGV: 1 id, 2 the follow-up's letter (r or e), 3 its entry's tail, 4 the entry's digest,
--       5 the trail's retention in ms, 6 the seal (chain.lua), 7 channel,
--       8 publish command, then the notifications as pairs: 9 an id, 10 its JSON, ...
local f = redis.call('HMGET', KEYS[1], 'state', 'follows')
if f[1] ~= 'open' then
  return 'closed'
end
local follows = f[2] or ''
if string.find(follows, ARGV[2], 1, true) then
  return 'done'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
audit_append(KEYS[3], KEYS[4], ARGV[3], ARGV[4], string.format('%.0f', now), ARGV[5], ARGV[6])
redis.call('HSET', KEYS[1], 'follows', follows .. ARGV[2])
for i = 9, #ARGV, 2 do
  redis.call('HSET', KEYS[5], ARGV[i], ARGV[i + 1])
end
local seq = redis.call('INCR', KEYS[2])
redis.call(ARGV[8], ARGV[7], seq .. audit_noted .. '\nfollowed\n' .. ARGV[1] .. '\n' .. ARGV[2])
return 'applied'
