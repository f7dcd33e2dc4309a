-- Seals one entry onto a session's audit trail (a list, and its head: "seq hash"), inside the
-- script whose change it records, so neither is kept without the other. The node writes what
-- the entry says (`tail`) and its SHA-256 (`digest`); this numbers it, times it by Redis's
-- clock, and chains it: hash = SHA-256(prev "\n" seq "\n" at_ms "\n" digest), or with an
-- audit key (`key_hex`, 64 hex digits; '' for none) HMAC-SHA256 under it of the same text, as
-- crate::audit::chain does. The key comes with each call and is never written to Redis. Both
-- keys live `retention` ms after the newest entry, then go together (they get the same expiry
-- in one script). A prefix, like sha256.lua (which must come before it): defines
-- hmac_sha256_hex and audit_append and nothing else.

-- HMAC-SHA256 (RFC 2104) of `message` under the 32-byte key whose hex is `key_hex`, as 64
-- lowercase hex digits. The key is shorter than SHA-256's 64-byte block, so it is padded with
-- zeros, then XORed with 0x36 for the inner hash and 0x5c for the outer.
local function hmac_sha256_hex(key_hex, message)
  local inner_pad, outer_pad = {}, {}
  for i = 1, 64 do
    local k = 0
    if i <= 32 then
      k = tonumber(string.sub(key_hex, 2 * i - 1, 2 * i), 16)
    end
    inner_pad[i] = string.char(bit.bxor(k, 0x36))
    outer_pad[i] = string.char(bit.bxor(k, 0x5c))
  end
  local inner = sha256_hex(table.concat(inner_pad) .. message)
  local inner_bytes = (string.gsub(inner, '..', function(pair)
    return string.char(tonumber(pair, 16))
  end))
  return sha256_hex(table.concat(outer_pad) .. inner_bytes)
end

local function audit_append(trail_key, head_key, tail, digest, now, retention, key_hex)
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
  if key_hex == '' then
    hash = sha256_hex(text)
  else
    hash = hmac_sha256_hex(key_hex, text)
  end
  redis.call('RPUSH', trail_key, '{"seq":' .. seq_text .. ',"at_ms":' .. now .. ',' .. tail ..
    ',"prev":"' .. prev .. '","hash":"' .. hash .. '"}')
  redis.call('SET', head_key, seq_text .. ' ' .. hash, 'PX', retention)
  redis.call('PEXPIRE', trail_key, retention)
  return seq_text
end
