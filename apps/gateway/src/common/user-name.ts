/**
 * What a user's name may be (`npm run user:create` refuses anything else): a name outside it
 * names nobody, so routes answer 404 without asking the database (which refuses a NUL byte).
 */
export const USER_NAME = /^[\w.@-]{1,100}$/;
