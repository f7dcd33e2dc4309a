-- Seals one entry onto a session's audit trail (a list, and its head: "seq hash"), inside the
-- script whose change it records, so neither is kept without the other. The node writes what
-- the entry says (`tail`) and its SHA-256 (`digest`); this numbers it, times it by Redis's
-- clock, and chains it: hash = SHA-256(prev "\n" seq "\n" at_ms "\n" digest), or with an
-- audit key HMAC-SHA256 under it of the same text, as crate::audit::chain does. A keyed call
-- gives `key_states` (128 hex digits; '' for none): the SHA-256 states after HMAC's inner and
-- outer key blocks (AuditKey::hmac_states_hex), so two of an HMAC's six blocks are not hashed
-- here on every entry. They come with each call and are never written to Redis. Both keys
-- live `retention` ms after the newest entry, then go together (they get the same expiry in
-- one script). A prefix, like sha256.lua (which must come before it): defines
-- hmac_sha256_hex and audit_append and nothing else.

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

local function audit_append(trail_key, head_key, tail, digest, now, retention, key_states)
  local head = redis.call('GET', head_key)
  local seq = 1
  local prev = '0000000000000000000000000000000000000000000000000000000000000000'
  if head then
    local space = string.find(head, ' ', 1, true)
    seq = tonumber(string.sub(head, 1, space - 1)) + 1
    prev = string.sub(head, space + 1)
  end
  local seq_text = string.format('%.0f', seq)
  local text = prev .. '\n' .. seq_text .. '\n' .. now .. '\n' .. digest
  local hash
  if key_states == '' then
    hash = sha256_hex(text)
  else
    hash = hmac_sha256_hex(key_states, text)
  end
  redis.call('RPUSH', trail_key, '{"seq":' .. seq_text .. ',"at_ms":' .. now .. ',' .. tail ..
    ',"prev":"' .. prev .. '","hash":"' .. hash .. '"}')
  redis.call('SET', head_key, seq_text .. ' ' .. hash, 'PX', retention)
  redis.call('PEXPIRE', trail_key, retention)
  return seq_text
end
