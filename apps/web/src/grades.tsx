import type { AnswerGrade, DeliberationGrades, GradeVerdict } from '@conclave/contracts';

/** The mark of a verdict, and the words a screen reader says for it. */
const MARKS: Record<GradeVerdict, { mark: string; words: string }> = {
  correct: { mark: '✓', words: 'correct' },
  incorrect: { mark: '✗', words: 'incorrect' },
  unreadable: { mark: '?', words: 'unreadable' },
};

/** What a graded row is, in words ("answer", "revised answer", "round 2 panel value"). */
export function answerKind(stageType: string): string {
  const round = /^round_(\d+)(_stats)?$/.exec(stageType);
  if (round) return round[2] ? `round ${round[1]} panel value` : `round ${round[1]} estimate`;
  switch (stageType) {
    case 'stage1':
    case 'initial_answer':
      return 'answer';
    case 'stage3':
      return 'synthesis';
    case 'revision':
      return 'revised answer';
    case 'vote_winner':
    case 'debate_winner':
      return 'winning answer';
    default:
      return stageType;
  }
}

function Mark({ verdict }: { verdict: GradeVerdict }) {
  const { mark, words } = MARKS[verdict];
  return (
    <span className={`grade-mark grade-${verdict}`} role="img" aria-label={words} title={words}>
      {mark}
    </span>
  );
}

function GradeLine({ answer, final }: { answer: AnswerGrade; final: boolean }) {
  const { grade } = answer;
  return (
    <li className={final ? 'grade-final' : undefined} data-verdict={grade.verdict}>
      <Mark verdict={grade.verdict} /> <span className="grade-kind">{answerKind(answer.stageType)}</span>
      {answer.model && (
        <>
          {' '}
          <strong className="grade-model">{answer.model}</strong>
        </>
      )}
      {final && <span className="badge">final</span>}
      {grade.extracted !== undefined && !grade.reason?.startsWith('read ') && (
        <>
          {' '}
          <span className="muted">read</span> <code>{grade.extracted}</code>
        </>
      )}
      {grade.reason && <span className="muted grade-reason"> — {grade.reason}</span>}
    </li>
  );
}

/**
 * A graded deliberation's grades (issue 37): the panel's final answer's verdict first, then every
 * graded answer in the order it was produced, each ✓ (correct), ✗ (incorrect) or ? (unreadable:
 * the grader found no answer, which is not counted as wrong), with what the grader read and why.
 * Grades are stored with the answers' rows; this only shows them.
 */
export function GradesPanel({ grades }: { grades: DeliberationGrades }) {
  const counts = { correct: 0, incorrect: 0, unreadable: 0 };
  for (const a of grades.answers) counts[a.grade.verdict]++;
  // The final answer is one of the answers (the last of its stage, model and seat); read over JSON,
  // it is an equal object, not the same one.
  const { final } = grades;
  let finalIndex = -1;
  grades.answers.forEach((a, i) => {
    if (
      final &&
      a.stageType === final.stageType &&
      a.model === final.model &&
      a.participant === final.participant
    )
      finalIndex = i;
  });
  return (
    <section className="grades" aria-label="grades" data-testid="grades">
      <h3>Graded answers</h3>
      <p className="grades-summary">
        {grades.final ? (
          <>
            The panel&apos;s final answer: <Mark verdict={grades.final.grade.verdict} />{' '}
            {MARKS[grades.final.grade.verdict].words}.
          </>
        ) : (
          <>No final answer graded yet.</>
        )}{' '}
        <span className="muted">
          {grades.answers.length} graded: {counts.correct} correct, {counts.incorrect} incorrect,{' '}
          {counts.unreadable} unreadable.
        </span>
      </p>
      <ul className="grades-list">
        {grades.answers.map((answer, i) => (
          <GradeLine
            key={`${answer.stageType}-${answer.participant ?? ''}-${i}`}
            answer={answer}
            final={i === finalIndex}
          />
        ))}
      </ul>
    </section>
  );
}
