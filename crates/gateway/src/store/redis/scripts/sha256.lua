-- SHA-256 (FIPS 180-4) in plain Lua 5.1 and Redis's `bit` library. Redis's scripting offers
-- only SHA-1 (redis.sha1hex), but the audit trail's hash chain is SHA-256, so that what the
-- scripts write is checked with the same hashes by the gateway's Rust side and by
-- `askgate audit verify`. This file is a prefix: the Rust side puts it in front of another
-- script's text, so it only defines locals (sha256_hex, sha256_continue and what they need),
-- creates no globals, reads no KEYS or ARGV and returns nothing.

-- The 64 round constants (the first 32 bits of the fractional parts of the cube roots of the
-- first 64 primes), built the first time a script run hashes: a run costs Redis ~7 us more
-- with them built up front, and most runs take the node's proposed hash and hash nothing
-- (chain.lua).
local sha256_K = nil

local function sha256_constants()
  if not sha256_K then
    sha256_K = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    }
    for i = 1, 64 do
      sha256_K[i] = bit.tobit(sha256_K[i])
    end
  end
  return sha256_K
end

-- Runs the compression function over the 64-byte blocks of `s` that start at bytes
-- `first`, `first + 64`, ... up to `last` (no block when `last < first`), folding each into
-- the eight state words in `H`. Words are kept as the signed 32-bit numbers the `bit`
-- functions return; a sum of a few of them is exact in a Lua number, and bit.tobit brings
-- it back to 32 bits.
local function sha256_blocks(s, first, last, H)
  local band, bor, bxor, ror, rshift, tobit = bit.band, bit.bor, bit.bxor, bit.ror, bit.rshift, bit.tobit
  local byte = string.byte
  local K = sha256_constants()
  local W = {}
  local h0, h1, h2, h3, h4, h5, h6, h7 = H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8]
  for p = first, last, 64 do
    -- The block's sixteen big-endian words, then the rest of the message schedule.
    for j = 1, 16 do
      local q = p + j * 4 - 4
      local b1, b2, b3, b4 = byte(s, q, q + 3)
      W[j] = tobit(b1 * 16777216 + b2 * 65536 + b3 * 256 + b4)
    end
    for j = 17, 64 do
      local x, y = W[j - 15], W[j - 2]
      W[j] = tobit(W[j - 16] + W[j - 7]
        + bxor(ror(x, 7), ror(x, 18), rshift(x, 3))
        + bxor(ror(y, 17), ror(y, 19), rshift(y, 10)))
    end
    local a, b, c, d, e, f, g, h = h0, h1, h2, h3, h4, h5, h6, h7
    for j = 1, 64 do
      -- choose(e, f, g) is g ^ (e & (f ^ g)); majority(a, b, c) is (a & b) | (c & (a | b)).
      local t1 = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g))) + K[j] + W[j]
      local t2 = bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + bor(band(a, b), band(c, bor(a, b)))
      h, g, f, e, d, c, b, a = g, f, e, tobit(d + t1), c, b, a, tobit(t1 + t2)
    end
    h0, h1, h2, h3 = tobit(h0 + a), tobit(h1 + b), tobit(h2 + c), tobit(h3 + d)
    h4, h5, h6, h7 = tobit(h4 + e), tobit(h5 + f), tobit(h6 + g), tobit(h7 + h)
  end
  H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8] = h0, h1, h2, h3, h4, h5, h6, h7
end

-- The SHA-256 of `message` continued from the state `H` (eight words, as sha256_blocks keeps
-- them), which has already taken `before` bytes (whole blocks), as 64 lowercase hex digits.
-- `H` is changed. HMAC starts its two hashes from states after the key's block (chain.lua).
local function sha256_continue(H, before, message)
  local length = #message
  -- The message's whole blocks are read where they are; only what is left is copied, into
  -- a last one or two blocks with the padding: a 0x80 byte, zeros, and the length in bits
  -- (everything hashed, `before` included) as a 64-bit big-endian number.
  local whole = length - length % 64
  sha256_blocks(message, 1, whole - 63, H)
  local floor = math.floor
  local bits = (before + length) * 8
  local high, low = floor(bits / 4294967296), bits % 4294967296
  local tail = string.sub(message, whole + 1)
    .. "\128"
    .. string.rep("\0", (55 - (length - whole)) % 64)
    .. string.char(
      floor(high / 16777216) % 256, floor(high / 65536) % 256, floor(high / 256) % 256, high % 256,
      floor(low / 16777216) % 256, floor(low / 65536) % 256, floor(low / 256) % 256, low % 256)
  sha256_blocks(tail, 1, #tail - 63, H)
  local hex = {}
  for i = 1, 8 do
    hex[i] = bit.tohex(H[i], 8)
  end
  return table.concat(hex)
end

-- The SHA-256 of the byte string `message`, as 64 lowercase hex digits.
local function sha256_hex(message)
  return sha256_continue({
    bit.tobit(0x6a09e667), bit.tobit(0xbb67ae85), bit.tobit(0x3c6ef372), bit.tobit(0xa54ff53a),
    bit.tobit(0x510e527f), bit.tobit(0x9b05688c), bit.tobit(0x1f83d9ab), bit.tobit(0x5be0cd19),
  }, 0, message)
end
