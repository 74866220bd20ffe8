import { appendLivePiece } from '@conclave/contracts';

/** Sent before the stored final text when what was streamed live turned out not to be its beginning. */
export const RESTART_NOTE = '\n\n[The text above was cut off; the final text follows.]\n\n';

/**
 * The final stage's answer as it is written, sent only as far as it cannot change once stored.
 * The stored answer is the model's text with NUL characters and echoed prompt markers (`<<<…>>>`
 * lines, stripEchoedMarkers) taken out, so the line a `<<<` appears on (and the newline before
 * it), trailing whitespace and trailing `<`s are held back; after a `<<<`, a NUL or a gap in the
 * pieces nothing more goes out live, and `finish` sends the rest of the stored text.
 */
export class LiveFinalText {
  private text = '';
  private sent = '';
  private live = true;

  /** What has been sent so far. */
  get sentText(): string {
    return this.sent;
  }

  /** A live piece of the answer at `offset` (a `model_partial` is one at 0): the text to send now. */
  add(offset: number, piece: string): string {
    if (!this.live) return '';
    if (offset > this.text.length) {
      // Pieces were missed: the rest comes from the stored answer.
      this.live = false;
      return '';
    }
    this.text = appendLivePiece(this.text, offset, piece);
    let end = this.text.length;
    // What was sent has neither: look from just before its end.
    const from = Math.max(0, this.sent.length - 2);
    const nul = this.text.indexOf('\u0000', from);
    const marker = this.text.indexOf('<<<', from);
    if (nul >= 0 || marker >= 0) {
      this.live = false;
      const first = Math.min(...[nul, marker].filter((i) => i >= 0));
      end = marker === first ? Math.max(0, this.text.lastIndexOf('\n', first)) : first;
    }
    while (end > 0 && /[\s<]/.test(this.text[end - 1])) end -= 1;
    if (end <= this.sent.length) return '';
    const next = this.text.slice(this.sent.length, end);
    this.sent += next;
    return next;
  }

  /**
   * The stored final text has arrived: what is left to send. When what was sent is not its
   * beginning (the call failed part-way and another text stands), the whole text follows a note.
   */
  finish(finalText: string): { rest: string; restarted: boolean } {
    if (finalText.startsWith(this.sent)) return { rest: finalText.slice(this.sent.length), restarted: false };
    return { rest: `${RESTART_NOTE}${finalText}`, restarted: true };
  }
}
