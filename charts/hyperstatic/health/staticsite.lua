-- Argo CD health check of a StaticSite (hyperstatic.dev/v1alpha1): the argocd-cm key
-- resource.customizations.health.hyperstatic.dev_StaticSite (charts/hyperstatic/README.md, "Health in Argo CD and Flux").
-- Argo runs it without Lua's standard libraries: only the base and table functions exist here (no string, math,
-- io or os.*). internal/gitopshealth runs it on StaticSites the operator drove in a real API server, one per state.
--
-- It reads what the operator writes (docs/staticsite.md, "Conditions"), the first rule that applies deciding:
--   no status, or status.observedGeneration < metadata.generation  -> Progressing: the conditions are about an
--     older spec (or none); the operator has not judged this one yet. kstatus (Flux) applies the same rule.
--   Stalled=True -> Degraded: progress needs someone to act (a tenancy policy violation, missing content, a child
--     the API server refused or someone else owns, a rollout past its deadline). Checked before Reconciling: a
--     pass that fails on a transient error adds Reconciling and leaves the last verdict, Stalled included, as it was.
--   Reconciling=True -> Progressing: the site moves towards its spec (created, rolling out, pods not ready yet,
--     a scale-up, pods taking new rules, a queued server image upgrade). Even when Ready stays True meanwhile (a
--     scale-up, a queued upgrade: the site serves as before), the spec is not reached yet; kstatus says InProgress.
--   Ready=True, reason ScaledToZero -> Suspended: spec.replicas is 0, so nothing serves, on purpose, until someone
--     scales the site up (the autoscaler never goes below 1). Like a paused Deployment: not broken, not serving.
--   Ready=True -> Healthy.
--   anything else (Ready False or Unknown without Stalled, no Ready yet) -> Progressing: not ready and no problem
--     reported; kstatus says InProgress for a Ready=False too.
-- The message is the deciding condition's "Reason: message".

local function condition(conditions, type)
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function say(c)
  if c.message == nil or c.message == "" then
    return c.reason
  end
  return c.reason .. ": " .. c.message
end

local hs = {}
local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.observedGeneration == nil or (generation ~= nil and status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end

local conditions = status.conditions or {}
local stalled = condition(conditions, "Stalled")
local reconciling = condition(conditions, "Reconciling")
local ready = condition(conditions, "Ready")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = say(stalled)
elseif reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = say(reconciling)
elseif ready ~= nil and ready.status == "True" and ready.reason == "ScaledToZero" then
  hs.status = "Suspended"
  hs.message = say(ready)
elseif ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = say(ready)
elseif ready ~= nil then
  hs.status = "Progressing"
  hs.message = say(ready)
else
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
end
return hs
