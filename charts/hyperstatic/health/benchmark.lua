-- Argo CD health check of a Benchmark (hyperstatic.dev/v1alpha1): the argocd-cm key
-- resource.customizations.health.hyperstatic.dev_Benchmark (charts/hyperstatic/README.md, "Health in Argo CD and Flux").
-- Argo runs it without Lua's standard libraries: only the base and table functions exist here (no string, math,
-- io or os.*). internal/gitopshealth runs it on Benchmarks the operator drove in a real API server, one per phase.
--
-- A Benchmark runs once (its spec is immutable): it waits for its target, runs its k6 Job, then records an
-- outcome, Complete or Failed, that never changes (docs/benchmark-controller.md). The first rule that applies
-- decides:
--   no status, or status.observedGeneration < metadata.generation -> Progressing: the operator has not seen it yet.
--   Failed=True (phase Failed) -> Degraded: the run produced no valid result (Job failed, timeout, target never
--     resolved, tenancy policy violation, ...). Terminal: only a new Benchmark runs again.
--   Complete=True (phase Complete) -> Healthy: the results are published. A run that measured the client
--     (ClientBound) or a target that changed under it (TargetChanged) is still complete: the message says so,
--     the results say which steps count.
--   Running=True (phase Running) -> Progressing: the k6 Job runs.
--   otherwise (phase Pending) -> Progressing: it waits for its target, at most spec.timeout (then Failed).
-- Never Suspended: a Benchmark cannot be paused, and its one wait ends by itself, resolved or failed.
-- The message is the deciding condition's "Reason: message".

local function condition(conditions, type)
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function isTrue(c)
  return c ~= nil and c.status == "True"
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
local failed = condition(conditions, "Failed")
local complete = condition(conditions, "Complete")
local running = condition(conditions, "Running")
local target = condition(conditions, "TargetResolved")
if isTrue(failed) then
  hs.status = "Degraded"
  hs.message = say(failed)
elseif isTrue(complete) then
  hs.status = "Healthy"
  hs.message = say(complete)
  for _, caveat in ipairs({"ClientBound", "TargetChanged"}) do
    local c = condition(conditions, caveat)
    if isTrue(c) then
      hs.message = hs.message .. " (" .. caveat .. " " .. say(c) .. ")"
    end
  end
elseif isTrue(running) then
  hs.status = "Progressing"
  hs.message = say(running)
elseif target ~= nil and target.status ~= "True" then
  hs.status = "Progressing"
  hs.message = "Waiting for the target: " .. say(target)
elseif running ~= nil then
  hs.status = "Progressing"
  hs.message = say(running)
else
  hs.status = "Progressing"
  hs.message = "Waiting for the operator's first verdict"
end
return hs
