-- Makes a person follow a session, or stop, once, within the most a session may have; with
-- its audit entry, and a notice to every node. The notice has sequence number 0, as presence
-- has: who follows is not a request's state, and a node that misses it reads the set again
-- with the session (session.lua).
-- KEYS: 1 the session's followers (a set), 2 its trail, 3 the trail's head.
-- ARGV: 1 the person, 2 '1' to follow or '0' to stop, 3 the most followers, 4 the entry's
--       tail, 5 its digest, 6 the trail's retention in ms, 7 the seal
--       (chain.lua), 8 the session's channel, 9 the publish command.
-- Returns: 'changed', 'same' (it already was so), or 'full'.
if ARGV[2] == '1' then
  if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
    return 'same'
  end
  if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[3]) then
    return 'full'
  end
  redis.call('SADD', KEYS[1], ARGV[1])
elseif redis.call('SREM', KEYS[1], ARGV[1]) == 0 then
  return 'same'
end
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
audit_append(KEYS[2], KEYS[3], ARGV[4], ARGV[5], now, ARGV[6], ARGV[7])
redis.call(ARGV[9], ARGV[8], '0' .. audit_noted .. '\nfollowers\n' .. ARGV[2] .. '\n' .. ARGV[1])
return 'changed'
