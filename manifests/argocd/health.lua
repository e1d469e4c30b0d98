-- Argo CD health check of example.com/v1 APIGateway. It reads what
-- kstatus (Flux) reads, so both tools agree on a gateway:
--   status.observedGeneration behind metadata.generation -> Progressing
--   Stalled=True (needs a change: refused routes, a taken name, an image
--   the kubelet cannot pull or start, ...)                -> Degraded
--   Ready=True                                            -> Healthy
--   Ready=False for ScaledToZero (spec.replicas is 0)     -> Suspended
--   anything else (rolling out, reloading, retrying)      -> Progressing
-- The operator decides what is terminal (the Stalled condition); this
-- script only reads it. See docs/platform.md, "Argo CD and Flux".
local hs = {}
local status = obj.status
if status == nil or status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report the gateway's status"
  return hs
end
if obj.metadata.generation ~= nil and status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(obj.metadata.generation)
  return hs
end
local conditions = {}
for _, c in ipairs(status.conditions) do
  conditions[c.type] = c
end
local function say(c)
  return c.type .. " " .. c.status .. " (" .. tostring(c.reason) .. "): " .. tostring(c.message)
end
local stalled, ready, degraded = conditions["Stalled"], conditions["Ready"], conditions["Degraded"]
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = say(stalled)
elseif ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = say(ready)
elseif ready ~= nil and ready.reason == "ScaledToZero" then
  hs.status = "Suspended"
  hs.message = say(ready)
elseif degraded ~= nil and degraded.status == "True" then
  -- A child the API server refused: the operator retries it.
  hs.status = "Progressing"
  hs.message = say(degraded)
elseif ready ~= nil then
  hs.status = "Progressing"
  hs.message = say(ready)
else
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
end
return hs
