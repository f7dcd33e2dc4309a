-- Seals one entry onto a session's audit trail (a list, and its head: "seq hash"), inside the
-- script whose change it records, so neither is kept without the other. The node writes what
-- the entry says (`tail`) and its SHA-256 (`digest`); this numbers it, times it by Redis's
-- clock, and chains it: hash = SHA-256(prev "\n" seq "\n" at_ms "\n" digest), or with an
-- audit key HMAC-SHA256 under it of the same text, as crate::audit::chain does. Both keys
-- live `retention` ms after the newest entry, then go together (they get the same expiry in
-- one script). A prefix, like sha256.lua (which must come before it): defines
-- hmac_sha256_hex, audit_append, audit_noted and audit_took and nothing else.
--
-- `seal`, the sealing scripts' last fixed argument, is `key_states` alone, or
-- `key_states|head|first_at|hashes`:
-- - `key_states` (128 hex digits; '' for none): the SHA-256 states after HMAC's inner and
--   outer key blocks (AuditKey::hmac_states_hex), so two of an HMAC's six blocks are not
--   hashed here on every entry. They come with each call and are never written to Redis.
-- - the rest is the node's proposal (store/redis/seals.rs): the hash this entry gets if the
--   head is still `head` (the head key's text, '' for none) and Redis's clock reads
--   `first_at + i` ms, the i-th 64 hex digits of `hashes`. SHA-256 in Lua costs ~45 us a
--   block, an entry four or five; the node hashes in microseconds. When the head or the
--   time is another, the entry is hashed here as before: the proposal only saves work, and
--   the entry (its seq, its time by Redis's clock, its place in the chain) is the same.

-- HMAC-SHA256 (RFC 2104) of `message`, finished from the key's two states, as 64 lowercase
-- hex digits.
local function hmac_sha256_hex(key_states, message)
  local function state(first)
    local H = {}
    for i = 0, 7 do
      local at = first + i * 8
      H[i + 1] = bit.tobit(tonumber(string.sub(key_states, at, at + 7), 16))
    end
    return H
  end
  local inner = sha256_continue(state(1), 64, message)
  local inner_bytes = (string.gsub(inner, '..', function(pair)
    return string.char(tonumber(pair, 16))
  end))
  return sha256_continue(state(65), 64, inner_bytes)
end

-- The new head (`seq hash`) of the entry this script run sealed, after a space, or '' when
-- it sealed none: the scripts put it beside the sequence number of the notice they publish,
-- so every node holding the session knows what to propose next.
local audit_noted = ''
-- '1' when the entry sealed took the node's proposed hash, else '0' (for the node's metrics).
local audit_took = '0'

-- The hash the node proposed for an entry after `head` at `now`, or nil (see `seal` above).
local function audit_proposed(proposal, head, now)
  local bar = string.find(proposal, '|', 1, true)
  if not bar or string.sub(proposal, 1, bar - 1) ~= (head or '') then
    return nil
  end
  local second = string.find(proposal, '|', bar + 1, true)
  if not second then
    return nil
  end
  local first_at = tonumber(string.sub(proposal, bar + 1, second - 1))
  if not first_at then
    return nil
  end
  local offset = tonumber(now) - first_at
  local at = second + 1 + offset * 64
  if offset < 0 or at + 63 > #proposal then
    return nil
  end
  return string.sub(proposal, at, at + 63)
end

local function audit_append(trail_key, head_key, tail, digest, now, retention, seal)
  local key_states, proposal = seal, nil
  local bar = string.find(seal, '|', 1, true)
  if bar then
    key_states, proposal = string.sub(seal, 1, bar - 1), string.sub(seal, bar + 1)
  end
  local head = redis.call('GET', head_key)
  local seq = 1
  local prev = '0000000000000000000000000000000000000000000000000000000000000000'
  if head then
    local space = string.find(head, ' ', 1, true)
    seq = tonumber(string.sub(head, 1, space - 1)) + 1
    prev = string.sub(head, space + 1)
  end
  local seq_text = string.format('%.0f', seq)
  local hash = proposal and audit_proposed(proposal, head, now)
  if hash then
    audit_took = '1'
  else
    local text = prev .. '\n' .. seq_text .. '\n' .. now .. '\n' .. digest
    if key_states == '' then
      hash = sha256_hex(text)
    else
      hash = hmac_sha256_hex(key_states, text)
    end
  end
  redis.call('RPUSH', trail_key, '{"seq":' .. seq_text .. ',"at_ms":' .. now .. ',' .. tail ..
    ',"prev":"' .. prev .. '","hash":"' .. hash .. '"}')
  redis.call('SET', head_key, seq_text .. ' ' .. hash, 'PX', retention)
  redis.call('PEXPIRE', trail_key, retention)
  audit_noted = ' ' .. seq_text .. ' ' .. hash
  return seq_text
end
