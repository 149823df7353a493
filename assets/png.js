// A PNG of one step for slides, drawn in the browser with no server and no library: the slide's HTML and
// CSS are laid out in a shadow root 1280 px wide, serialised into an SVG <foreignObject>, drawn on a canvas
// at twice the size, and downloaded. Used by the standalone export and by the app's PNG button.
async function slidePng(html, css, filename) {
  const host = document.createElement("div");
  host.style.cssText = "position:absolute;left:-20000px;top:0;width:1280px";
  document.body.append(host);
  try {
    const root = host.attachShadow({ mode: "open" });
    const wrapper = document.createElement("div");
    const style = document.createElement("style");
    style.textContent = css;
    const page = document.createElement("div");
    page.className = "ll-page ll-light";
    page.style.width = "1280px";
    page.innerHTML = html;
    wrapper.append(style, page);
    root.append(wrapper);
    const width = page.offsetWidth, height = page.offsetHeight;
    const svg =
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
      `<foreignObject x="0" y="0" width="${width}" height="${height}">` +
      new XMLSerializer().serializeToString(wrapper) +
      "</foreignObject></svg>";
    const image = new Image();
    image.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = width * 2;
    canvas.height = height * 2;
    const context = canvas.getContext("2d");
    context.scale(2, 2);
    context.drawImage(image, 0, 0);
    const blob = await new Promise((done) => canvas.toBlob(done, "image/png"));
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = filename;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  } finally {
    host.remove();
  }
}
