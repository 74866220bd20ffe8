export * from './text';
export * from './numbers';
export * from './choice';
export * from './regex-guard';
export * from './graders';
export * from './model-grader';
export * from './validate';
