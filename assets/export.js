// The standalone export's player: the panels of every step (rendered by visuals/ in Python, exactly as the
// app shows them) arrive gzipped in #ll-steps; buttons, the slider, Play and the keyboard swap them in.
// No server and no network: DecompressionStream is the browser's own.
(async () => {
  const $ = (id) => document.getElementById(id);
  const data = $("ll-steps");
  const names = JSON.parse(data.dataset.names);
  const slider = $("ll-step"), play = $("ll-play"), number = $("ll-step-number");
  let panels;
  try {
    const bytes = Uint8Array.from(atob(data.textContent.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    panels = JSON.parse(await new Response(stream).text());
  } catch (error) {
    $("ll-problem").textContent =
      "This browser cannot unpack the recorded steps (it needs DecompressionStream: Chrome 80, Firefox 113, " +
      "Safari 16.4 or later), so only the step below is shown. " + error;
    return;
  }
  const last = panels[names[0]].length - 1;
  let step = Number($("ll-slide").dataset.step), timer = null;

  function show(k) {
    step = Math.min(Math.max(Math.round(Number(k)) || 0, 0), last);
    for (const name of names) $("ll-" + name).innerHTML = panels[name][step];
    slider.value = String(step);
    number.textContent = `step ${step} of ${last}`;
    $("ll-slide").dataset.step = String(step);
    history.replaceState(null, "", "#step=" + step);
  }
  function pause() {
    clearInterval(timer);
    timer = null;
    play.textContent = "▶ Play";
  }
  function toggle() {
    if (timer !== null) return pause();
    if (step >= last) show(0);
    play.textContent = "❚❚ Pause";
    timer = setInterval(() => (step >= last ? pause() : show(step + 1)), 1000 / Number($("ll-speed").value));
  }

  $("ll-back").addEventListener("click", () => show(step - 1));
  $("ll-forward").addEventListener("click", () => show(step + 1));
  slider.addEventListener("input", () => show(slider.value));
  play.addEventListener("click", toggle);
  $("ll-speed").addEventListener("change", () => { if (timer !== null) { pause(); toggle(); } });
  const contrast = $("ll-contrast");
  function highContrast(on) {
    document.documentElement.classList.toggle("ll-contrast-high", on);
    contrast.setAttribute("aria-pressed", String(on));
  }
  contrast.addEventListener("click", () => highContrast(contrast.getAttribute("aria-pressed") !== "true"));
  highContrast(new URLSearchParams(location.search).get("contrast") === "high");
  $("ll-png").addEventListener("click", () =>
    slidePng($("ll-slide").outerHTML, $("ll-css").textContent, `lookahead-step-${step}.png`));
  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, select, textarea, button, [role=region]")) return;
    const moves = { ArrowLeft: () => show(step - 1), ArrowRight: () => show(step + 1), " ": toggle };
    if (moves[event.key]) { event.preventDefault(); moves[event.key](); }
  });
  const wanted = /^#step=(\d+)$/.exec(location.hash);
  show(wanted ? wanted[1] : step);
  document.body.dataset.ready = "true";
})();
