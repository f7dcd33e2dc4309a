-- Seals one entry onto a session's audit trail (a list, and its head: "seq hash"), inside the
-- script whose change it records, so neither is kept without the other. The node writes what
-- the entry says (`tail`) and its SHA-256 (`digest`); this numbers it, times it by Redis's
-- clock, and chains it: hash = SHA-256(prev "\n" seq "\n" at_ms "\n" digest), as
-- crate::audit::chain does. Both keys live `retention` ms after the newest entry, then go
-- together (they get the same expiry in one script). A prefix, like sha256.lua (which must
-- come before it): defines audit_append and nothing else.
local function audit_append(trail_key, head_key, tail, digest, now, retention)
  local head = redis.call('GET', head_key)
  local seq = 1
  local prev = '0000000000000000000000000000000000000000000000000000000000000000'
  if head then
    local space = string.find(head, ' ', 1, true)
    seq = tonumber(string.sub(head, 1, space - 1)) + 1
    prev = string.sub(head, space + 1)
  end
  local seq_text = string.format('%.0f', seq)
  local hash = sha256_hex(prev .. '\n' .. seq_text .. '\n' .. now .. '\n' .. digest)
  redis.call('RPUSH', trail_key, '{"seq":' .. seq_text .. ',"at_ms":' .. now .. ',' .. tail ..
    ',"prev":"' .. prev .. '","hash":"' .. hash .. '"}')
  redis.call('SET', head_key, seq_text .. ' ' .. hash, 'PX', retention)
  redis.call('PEXPIRE', trail_key, retention)
  return seq_text
end
