// The viewer's few behaviours: draw the curves when the page has loaded (they take a moment),
// recolour the heatmap by another recorded value, and show a token's values on hover.
"use strict";

function loadCurves() {
  const figure = document.getElementById("curves");
  if (!figure) return;
  fetch(figure.dataset.src)
    .then((response) => response.ok ? response.text() : response.text().then((text) => { throw new Error(text); }))
    .then((svg) => { figure.innerHTML = svg; figure.dataset.loaded = "true"; })
    .catch((error) => { figure.textContent = "The curves could not be drawn: " + error.message; });
}

function colourBy(name) {
  for (const token of document.querySelectorAll(".tok")) {
    token.style.backgroundColor = token.getAttribute("data-bg-" + name) || "transparent";
    token.style.color = token.getAttribute("data-fg-" + name) || "#000";
  }
  for (const range of document.querySelectorAll(".scale-range")) {
    range.hidden = range.dataset.name !== name;
  }
  document.body.dataset.colourBy = name;
}

function describe(token) {
  const lines = ["token " + token.dataset.index + "  id " + token.dataset.id, JSON.stringify(token.textContent)];
  const labels = { advantage: "A", shaping: "A−A_i", delta: "Δ", weight: "w", logprob: "log p" };
  for (const attribute of token.getAttributeNames()) {
    if (!attribute.startsWith("data-") || attribute.startsWith("data-bg-") || attribute.startsWith("data-fg-")) continue;
    const name = attribute.slice(5);
    if (name === "index" || name === "id") continue;
    const value = Number(token.getAttribute(attribute));
    lines.push((labels[name] || name).padEnd(6) + value.toFixed(4));
  }
  return lines.join("\n");
}

function hoverTokens() {
  const tooltip = document.getElementById("tooltip");
  if (!tooltip) return;
  document.addEventListener("mouseover", (event) => {
    const token = event.target.closest(".tok");
    if (!token) { tooltip.hidden = true; return; }
    tooltip.textContent = describe(token);
    tooltip.hidden = false;
    const box = token.getBoundingClientRect();
    const above = box.top - tooltip.offsetHeight - 6;  // above the token, so the text below stays readable
    tooltip.style.left = Math.min(box.left, window.innerWidth - tooltip.offsetWidth - 8) + "px";
    tooltip.style.top = (above >= 0 ? above : box.bottom + 6) + "px";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  loadCurves();
  hoverTokens();
  for (const input of document.querySelectorAll("input[name=colour-by]")) {
    input.addEventListener("change", () => colourBy(input.value));
  }
  const checked = document.querySelector("input[name=colour-by]:checked");
  if (checked) document.body.dataset.colourBy = checked.value;
});
