// Updates the clock line once a second: proof that the script was served with the right type.
(function () {
  "use strict";
  var el = document.querySelector("#clock span");
  if (!el) return;
  function tick() { el.textContent = new Date().toLocaleTimeString(); }
  tick();
  setInterval(tick, 1000);
})();
