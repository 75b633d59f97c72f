local function vote()
-- One read of the request's fields the tally needs.
local req = redis.call('HMGET', KEYS[1], 'status', 'deadline', 'aq', 'dq')
local status = req[1]
if not status then return {'missing', '', '', 0, 0} end
if ARGV[1] ~= '' and redis.call('SADD', KEYS[4], ARGV[1]) == 0 then
  return {'duplicate', 'this delivery was already received', status, 0, 0}
end
local recorded = 1
local function record(result, why)
  -- Counted votes are bounded by the persona; ignored ones (anyone on a
  -- relay can react) stop being stored past ARGV[11].
  if result == 'ignored' and redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[11]) then
    recorded = 0
    return
  end
  redis.call('RPUSH', KEYS[2], result .. '\n' .. why .. '\n' .. ARGV[6])
end
local function finish(st, by, reason)
  redis.call('HSET', KEYS[1], 'status', st, 'decided_at', ARGV[7], 'decided_by', by, 'reason', reason)
  local ttl = tonumber(ARGV[10])
  for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
  redis.call('PUBLISH', ARGV[8], ARGV[9])
  redis.call('PUBLISH', ARGV[8] .. ':final', ARGV[9])
end
local function approving(c) return c == 'approve' or c == 'always' end
if status ~= 'pending' then
  local why = 'already decided: ' .. status
  record('ignored', why)
  return {'ignored', why, status, 0, recorded}
end
if tonumber(ARGV[7]) >= tonumber(req[2]) then
  finish('expired', '', 'no one answered in time, and silence is not consent')
  record('ignored', 'the deadline had passed')
  return {'ignored', 'the deadline had passed', 'expired', 1, recorded}
end
if ARGV[3] == '' then
  record('ignored', ARGV[5])
  return {'ignored', ARGV[5], status, 0, recorded}
end
if not approving(ARGV[4]) and ARGV[4] ~= 'deny' then
  local why = 'not an approve or deny answer'
  record('ignored', why)
  return {'ignored', why, status, 0, recorded}
end
local prior = redis.call('HGET', KEYS[3], ARGV[2])
if prior then
  local why = ARGV[2] .. ' already voted ' .. string.sub(prior, string.find(prior, ':') + 1) .. '; the first vote stands'
  record('ignored', why)
  return {'ignored', why, status, 0, recorded}
end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3] .. ':' .. ARGV[4])
record('counted', '')
if ARGV[3] == 'owner' then
  local st = 'approved'
  if ARGV[4] == 'deny' then st = 'denied' end
  finish(st, ARGV[2], '')
  if ARGV[4] == 'always' then
    redis.call('HSET', KEYS[1], 'always', '1')
    return {'counted', '', st, 1, recorded, 1}
  end
  return {'counted', '', st, 1, recorded, 0}
end
local approvers, deniers, always = {}, {}, 0
local all = redis.call('HGETALL', KEYS[3])
for i = 1, #all, 2 do
  local v = all[i + 1]
  if v == 'member:approve' or v == 'member:always' then table.insert(approvers, all[i])
  elseif v == 'member:deny' then table.insert(deniers, all[i]) end
  if v == 'member:always' then always = always + 1 end
end
table.sort(approvers)
table.sort(deniers)
if ARGV[4] == 'deny' and #deniers >= tonumber(req[4]) then
  finish('denied', table.concat(deniers, '\n'), '')
  return {'counted', '', 'denied', 1, recorded}
end
local aq = tonumber(req[3])
if approving(ARGV[4]) and aq > 0 and #approvers >= aq then
  finish('approved', table.concat(approvers, '\n'), '')
  if always >= aq then
    redis.call('HSET', KEYS[1], 'always', '1')
    return {'counted', '', 'approved', 1, recorded, 1}
  end
  return {'counted', '', 'approved', 1, recorded, 0}
end
return {'counted', '', status, 0, recorded}
end
local res = vote()
if res[4] == 0 and res[5] == 1 then redis.call('PUBLISH', ARGV[8], ARGV[9]) end
return res
