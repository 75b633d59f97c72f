package redis

import goredis "github.com/redis/go-redis/v9"

// The Lua scripts below touch only keys of one request, all carrying the
// request id as a {hash tag}, so they run on Redis Cluster too.

// voteScript records one judged ballot and tallies, atomically: the rules
// of quorum.Tally, applied to the vote just added.
//
// KEYS: 1 request hash, 2 votes list, 3 voters hash, 4 seen set (the
// last two of a legacy request only, see requestKeys)
// ARGV: 1 dedup key, 2 person, 3 role (owner|member|""), 4 choice,
// 5 why (when role is ""), 6 vote JSON, 7 now (ms), 8 channel, 9 id,
// 10 retention seconds after a decision, 11 most answers stored per request
//
// Returns {result, why, status, decided(0|1), recorded(0|1), grant(0|1)}.
// A choice of "always" is an approval; when the votes that decide are all
// "always" (the owner's, or approvalQuorum members'), the request is marked
// always=1 and grant is 1.
//
// It publishes the request's id on ARGV[8] when it stored the answer (a
// vote counted or an answer ignored, the request still pending or already
// decided): waiters on every replica look again, with no round trip of
// its own after the vote's. A decision is published there and also on
// ARGV[8]..':final' (finalChannel), which carries nothing else. An answer
// stored that leaves the request pending is also published on
// ARGV[8]..':notice' (noticeChannel), before the bare id, as the vote
// itself: its index in the votes list and the line stored, signed with
// the request's notice key (notice.go); one stored on a decided request
// (or on a request made before notice keys) as a change to read.
//
// It reads everything before it writes anything, and calls stored()
// (defined before voteLua; a no-op here) right before its first write
// when the answer is to be stored: the audited script appends the
// answer's record there, so a record that cannot be appended refuses the
// vote with nothing written. A decision sets two TTLs (four on a legacy
// request).
var voteScript = goredis.NewScript("local function stored() end\n" + voteLua)

const voteLua = `
local nk, nline, nidx -- for the notice: the request's key, the line stored, its index
local function vote()
-- One read of everything the tally needs: the request's status, deadline
-- and quorums, whether this delivery came before, the voter's earlier
-- vote and the members' votes so far. A request made before the voters
-- and deliveries moved into its hash (legacy: 'deadline' where later
-- ones have 'due') keeps them in keys of their own, KEYS[3] and KEYS[4].
local dk, vk = 'd:' .. ARGV[1], 'v:' .. ARGV[2] -- the delivery's and the voter's fields
local req = redis.call('HMGET', KEYS[1], 'status', 'due', 'aq', 'dq', dk, vk, 'ma', 'md', 'mw', 'deadline', 'na', 'nd', 'nk')
local status = req[1]
nk = req[13]
if not status then return {'missing', '', '', 0, 0} end
local legacy = not req[2]
if ARGV[1] ~= '' then
  local seen = req[5]
  if legacy then seen = redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1 end
  if seen then return {'duplicate', 'this delivery was already received', status, 0, 0} end
end
local function approving(c) return c == 'approve' or c == 'always' end
-- First what the vote does, from what was read; then its writes.
local result, why, counted, decision, grant = 'ignored', '', false, nil, 0
-- The request hash's fields to set, counted in nf (no table growth).
local fields, nf = {false, false, false, false, false, false, false, false, false, false, false, false}, 0
local function set(k, v) fields[nf + 1] = k; fields[nf + 2] = v; nf = nf + 2 end
if status ~= 'pending' then
  why = 'already decided: ' .. status
elseif tonumber(ARGV[7]) >= tonumber(req[2] or req[10]) then
  why = 'the deadline had passed'
  decision = {'expired', '', 'no one answered in time, and silence is not consent'}
elseif ARGV[3] == '' then
  why = ARGV[5]
elseif not approving(ARGV[4]) and ARGV[4] ~= 'deny' then
  why = 'not an approve or deny answer'
else
  local prior = req[6]
  if legacy then prior = redis.call('HGET', KEYS[3], ARGV[2]) end
  if prior then
    why = ARGV[2] .. ' already voted ' .. string.sub(prior, string.find(prior, ':') + 1) .. '; the first vote stands'
  else
    result, counted = 'counted', true
  end
end
-- decidedBy is the names of a decision's side, sorted and joined: split
-- from what was stored (a name may hold a newline), with the vote's own.
local function decidedBy(stored, name)
  local t = {}
  if stored then for n in string.gmatch(stored, '[^\n]+') do t[#t + 1] = n end end
  t[#t + 1] = name
  table.sort(t)
  return table.concat(t, '\n')
end
if counted and ARGV[3] == 'owner' then
  local st = 'approved'
  if ARGV[4] == 'deny' then st = 'denied' end
  decision = {st, ARGV[2], ''}
  if ARGV[4] == 'always' then grant = 1 end
elseif counted and legacy then
  -- A legacy request's members' votes are in its voters hash: the
  -- approvers and deniers so far (their names joined for decided_by,
  -- counted apart) and how many of the approvals were "always".
  local approvers, deniers, always = {}, {}, 0
  local all = redis.call('HGETALL', KEYS[3])
  for i = 1, #all, 2 do
    local v = all[i + 1]
    if v == 'member:approve' or v == 'member:always' then table.insert(approvers, all[i])
    elseif v == 'member:deny' then table.insert(deniers, all[i]) end
    if v == 'member:always' then always = always + 1 end
  end
  if approving(ARGV[4]) then
    if ARGV[4] == 'always' then always = always + 1 end
    local aq = tonumber(req[3])
    if aq > 0 and #approvers + 1 >= aq then
      table.insert(approvers, ARGV[2])
      table.sort(approvers)
      decision = {'approved', table.concat(approvers, '\n'), ''}
      if always >= aq then grant = 1 end
    end
  elseif #deniers + 1 >= tonumber(req[4]) then
    table.insert(deniers, ARGV[2])
    table.sort(deniers)
    decision = {'denied', table.concat(deniers, '\n'), ''}
  end
elseif counted then
  -- The members who approved and denied so far are their names joined
  -- ('ma', 'md'), counted apart ('na', 'nd': a name may hold a newline),
  -- and 'mw' of the approvals were "always". A vote appends its name and
  -- counts itself; the names are sorted only for a decision's decided_by.
  if approving(ARGV[4]) then
    local na = tonumber(req[11] or '0') + 1
    local ma = ARGV[2]
    if req[7] then ma = req[7] .. '\n' .. ARGV[2] end
    set('ma', ma); set('na', na)
    local always = req[9]
    if ARGV[4] == 'always' then always = tonumber(always or '0') + 1; set('mw', always) end
    local aq = tonumber(req[3])
    if aq > 0 and na >= aq then
      decision = {'approved', decidedBy(req[7], ARGV[2]), ''}
      if tonumber(always or '0') >= aq then grant = 1 end
    end
  else
    local nd = tonumber(req[12] or '0') + 1
    local md = ARGV[2]
    if req[8] then md = req[8] .. '\n' .. ARGV[2] end
    set('md', md); set('nd', nd)
    if nd >= tonumber(req[4]) then decision = {'denied', decidedBy(req[8], ARGV[2]), ''} end
  end
end
-- Counted votes are bounded by the persona; ignored ones (anyone on a
-- relay can react) stop being stored past ARGV[11].
local recorded = 1
if result == 'ignored' and redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[11]) then recorded = 0 end
if recorded == 1 then
  stored() -- before any write (the audited script appends the record there)
  nline = result .. '\n' .. why .. '\n' .. ARGV[6]
  nidx = redis.call('RPUSH', KEYS[2], nline)
end
if ARGV[1] ~= '' then
  if legacy then redis.call('SADD', KEYS[4], ARGV[1]) else set(dk, '1') end
end
if counted then
  if legacy then redis.call('HSET', KEYS[3], ARGV[2], ARGV[3] .. ':' .. ARGV[4]) else set(vk, ARGV[3] .. ':' .. ARGV[4]) end
end
if grant == 1 then set('always', '1') end
local function finish(st, by, reason)
  set('status', st); set('decided_at', ARGV[7]); set('decided_by', by); set('reason', reason)
  redis.call('HSET', KEYS[1], unpack(fields, 1, nf))
  local ttl = tonumber(ARGV[10])
  local n = 2 -- the request's hash and its answers; a legacy one's voters and deliveries too
  if legacy then n = 4 end
  for i = 1, n do redis.call('EXPIRE', KEYS[i], ttl) end
  redis.call('PUBLISH', ARGV[8], ARGV[9])
  redis.call('PUBLISH', ARGV[8] .. ':final', ARGV[9])
end
if decision then
  finish(decision[1], decision[2], decision[3])
  return {result, why, decision[1], 1, recorded, grant}
end
if nf > 0 then redis.call('HSET', KEYS[1], unpack(fields, 1, nf)) end
return {result, why, status, 0, recorded, 0}
end
local res = vote()
if res[4] == 0 and res[5] == 1 then
  if res[3] == 'pending' and nk then
    local m = ARGV[9] .. '\n' .. nidx .. '\n' .. nline
    redis.call('PUBLISH', ARGV[8] .. ':notice', 'v\n' .. redis.sha1hex(string.sub(nk, 65) .. redis.sha1hex(string.sub(nk, 1, 64) .. m)) .. '\n' .. m)
  else
    redis.call('PUBLISH', ARGV[8] .. ':notice', 'c\n' .. ARGV[9])
  end
  redis.call('PUBLISH', ARGV[8], ARGV[9])
end
return res
`

// resolveScript decides a pending request without a vote (no owner, no
// channel, expiry). KEYS: 1 request hash, 2 votes, 3 voters, 4 seen (a
// legacy request's).
// ARGV: 1 status, 2 reason, 3 now (ms), 4 channel, 5 id, 6 retention,
// 7 "due" to act only when the deadline has passed.
// Returns 1 when this call decided it.
var resolveScript = goredis.NewScript(`
local req = redis.call('HMGET', KEYS[1], 'status', 'due', 'deadline')
if req[1] ~= 'pending' then return 0 end
if ARGV[7] == 'due' and tonumber(ARGV[3]) < tonumber(req[2] or req[3]) then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'decided_at', ARGV[3], 'decided_by', '', 'reason', ARGV[2])
local ttl = tonumber(ARGV[6])
local n = 2
if not req[2] then n = 4 end
for i = 1, n do redis.call('EXPIRE', KEYS[i], ttl) end
redis.call('PUBLISH', ARGV[4], ARGV[5])
redis.call('PUBLISH', ARGV[4] .. ':final', ARGV[5])
return 1
`)

// addMessagesScript appends a request's posted messages and announces
// them on the notice channel in the same step, so a replica hears of them
// before any vote stored after them. KEYS: 1 messages list. ARGV: 1
// notice channel, 2 id, 3 TTL seconds, 4… the message lines. Returns the
// list's length.
var addMessagesScript = goredis.NewScript(`
local n = redis.call('RPUSH', KEYS[1], unpack(ARGV, 4))
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[1], 'm\n' .. ARGV[2] .. '\n' .. n)
return n
`)
