-- Looks at the lock without taking it (rlock wait).
-- Returns {1} when it is free; while it is held, the busy reply acquire.lua
-- gives (see held_reply in prelude.lua), its place in the queue 0.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {1}
end
return held_reply(0)
