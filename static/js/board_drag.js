/* Drag a board card to Done or back to Open: the drop submits the card's own "Move to" form
   (the keyboard's and the phone's way), so both paths ask the server the same thing and the
   board's socket then moves the card. Columns whose tasks follow their sessions take no drop. */
(function () {
  "use strict";
  var dragged = null;

  function moveButton(card, column) {
    if (!card || !column) return null;
    var status = column.id.replace(/^column-/, "");
    return card.querySelector('.move-menu button[name="status"][value="' + status + '"]');
  }

  document.addEventListener("dragstart", function (event) {
    var card = event.target.closest && event.target.closest("article.task[draggable]");
    if (!card) return;
    dragged = card;
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", card.id);
  });
  document.addEventListener("dragend", function () {
    dragged = null;
  });
  document.addEventListener("dragover", function (event) {
    var column = event.target.closest && event.target.closest(".board-column");
    if (moveButton(dragged, column)) {
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
    }
  });
  document.addEventListener("drop", function (event) {
    var column = event.target.closest && event.target.closest(".board-column");
    var button = moveButton(dragged, column);
    if (!button) return;
    event.preventDefault();
    button.form.requestSubmit(button);
    dragged = null;
  });
})();
