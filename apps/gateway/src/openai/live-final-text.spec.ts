import { stripEchoedMarkers } from '../../../../libs/deliberation/src/shared/fence';
import { LiveFinalText, RESTART_NOTE } from './live-final-text';

/** Feeds `text` in pieces of `size` characters; what was sent, piece by piece. */
function stream(text: string, size: number, live = new LiveFinalText()): string[] {
  const sent: string[] = [];
  for (let offset = 0; offset < text.length; offset += size) {
    const piece = live.add(offset, text.slice(offset, offset + size));
    if (piece) sent.push(piece);
  }
  return sent;
}

describe('LiveFinalText', () => {
  it('sends the answer as it is written, holding back trailing whitespace until it is followed', () => {
    const live = new LiveFinalText();
    expect(live.add(0, 'The answer ')).toBe('The answer');
    expect(live.add(11, 'is 42.\n')).toBe(' is 42.');
    expect(live.add(18, '\nThat is all.')).toBe('\n\nThat is all.');
    expect(live.finish('The answer is 42.\n\nThat is all.')).toEqual({ rest: '', restarted: false });
  });

  it('ignores pieces it already has and stops at a gap; the rest comes from the stored text', () => {
    const live = new LiveFinalText();
    expect(live.add(0, 'Hello world')).toBe('Hello world');
    expect(live.add(6, 'world')).toBe('');
    expect(live.add(20, 'later')).toBe('');
    expect(live.add(11, ', again')).toBe('');
    expect(live.finish('Hello world, again and later')).toEqual({
      rest: ', again and later',
      restarted: false,
    });
  });

  it('whatever the pieces, what it sends is the start of the stored answer (echoed markers taken out)', () => {
    const nonce = '0123456789abcdef';
    const prompt = [{ content: `<<<QUESTION ${nonce}>>>\nWhy?\n<<<END QUESTION ${nonce}>>>` }];
    const outputs = [
      'Plain text with trailing space   ',
      `Intro line\n<<<QUESTION ${nonce}>>>\nWhy?\n<<<END QUESTION ${nonce}>>>\nThe answer.`,
      `Text then   <<<END QUESTION ${nonce}>>>`,
      `Last line\n<<<END QUESTION ${nonce}>>>`,
      `A < b and c << d, but <<<not a marker>>> stays.`,
      'NUL \u0000 inside',
      `<<<QUESTION ${nonce}>>> first`,
    ];
    for (const output of outputs) {
      const stored = stripEchoedMarkers(output.replaceAll('\u0000', ''), prompt);
      for (const size of [1, 2, 3, 7, 1000]) {
        const live = new LiveFinalText();
        const sent = stream(output, size, live).join('');
        expect([output, size, stored.startsWith(sent)]).toEqual([output, size, true]);
        const { rest, restarted } = live.finish(stored);
        expect(restarted).toBe(false);
        expect(sent + rest).toBe(stored);
      }
    }
  });

  it('says so when what was sent is not the start of the stored text, then sends that text whole', () => {
    const live = new LiveFinalText();
    live.add(0, 'A first attempt that');
    expect(live.finish('Another text')).toEqual({ rest: `${RESTART_NOTE}Another text`, restarted: true });
  });
});
